"""Update (Algorithm 3 of the elastic paper, with §3.3 negation), event-driven, compiled.

Algorithm 3 walks the iterations 1, 2, ... of a stratum and at each iteration k adjusts the
counts N#_k by three terms (DESIGN.md, "The elastic algorithm"):

- Del: old derivations (body in I°_{k-1}, some atom in N°_{k-1}, head not in I°_{k-1}) with a
  positive atom in I⁻_{k-1} or a negated atom inserted (I⁺_0): subtract;
- Ins: new derivations (body in I_{k-1}, some atom in N_{k-1}, head not in I_{k-1}) with a
  positive atom in I⁺_{k-1} or a negated atom deleted (I⁻_0): add;
- Red: derivations valid in both epochs with some atom in N_{k-1} whose head is in I⁻_{k-1}: add;

then drops from N#_k the tuples already in I⁺_{k-1}. In terms of a derivation d, "body in I_{k-1}
with some atom in N_{k-1}" says exactly that d fires at k = 1 + max over its positive atoms of
their iteration: every derivation fires in one iteration per epoch, f°(d) in the old and f(d) in
the new. So the terms at k only ever contain derivations that contain a *changed* tuple (o != n)
or whose head was deleted, and that fire at k in one of the epochs. With f° = k, "a positive atom
in I⁻_{k-1}" is "f > k"; with f = k, "a positive atom in I⁺_{k-1}" is "f° > k".

That is how Update avoids walking CRDT's 8,282 iterations for a 10-tuple change: whenever
tuples change status (input facts flip, a count drops to zero, a tuple gets a new iteration)
every derivation containing them is enumerated once through the hash indexes, and scheduled at
the iterations where it can count: at f° if it can be in Del there, at the current estimate of
f if it can be in Ins or Red there. For a deleted tuple, the derivations of it as a head are
enumerated too (re-discovery, the paper's provenance idea). Iterations are then processed in
order from a heap, each candidate re-classified against the final statuses, deduplicated by
identity, and counted in at most one of the three terms.

Why an estimate is good enough: at iteration k every tuple whose new iteration is below k is
decided, and a tuple changes status only at its old or its new iteration, re-enumerating every
derivation it is in (with the current iteration as the floor of what it schedules). So the last
enumeration of a derivation before k saw the final answer to "is this atom's n below k" for every
atom, which is all that f = k and the terms depend on, except the head's n, which the classifier
reads at k. Cost is proportional to the changed tuples and their derivations, never to the depth
of the recursion; "early exit" is the heap running empty.

The modules:

- `plans`: a rule's join plans (`reasoner.plan.joins`) written as arrays of integers, for
  every way a changed tuple can drive the rule (as a positive atom, a negated atom, the head);
- `kernel` (Cython): one loop that interprets those arrays over the tables' rows, the
  enumerators and the drain, statuses keyed by row id (a hash map, arrays once many rows
  change), candidates in an arena, iterations in a binary heap; also Bootstrap's per-tuple
  iterations (Algorithm 2);
- `run`: one stratum's Update, its inputs in and its changes out to the epoch's overlay;
- `bootstrap`: one stratum's per-tuple Bootstrap on the same kernel;
- `deadline`: the epoch's deadline, past which the Update is dropped for a Bootstrap;
- `explain`: `reasoner explain PROGRAM`, the plans in words.

Layer: above `plan`, beside `io`; it imports the analysis, the storage, the values and the
support. Used by the executors (the per-tuple Bootstrap), the facade (Update) and the command
line (`explain`).
"""
