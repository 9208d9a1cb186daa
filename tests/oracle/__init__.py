"""The test oracle: a naive evaluator that *defines* the sparse proof-count state.

It is the specification the engine is tested against, so it is written to be obviously right
rather than fast, and shares nothing with the engine beyond the parser's AST: it computes its
own strata, does its own arithmetic and enumerates rule instantiations by brute force (nested
loops over whole relations, no indexes, no join planning).

The state (Zhao et al., *Towards Elastic Incrementalization for Datalog*, §3.1) maps every
tuple of every relation to `(iteration, count)`:

- Facts of relations without rules (inputs and program-text facts) are `(0, 1)`.
- Strata are evaluated in dependency order. For a stratum S, every tuple of a lower stratum
  counts as iteration 0 (whatever its own iteration), and so do the facts asserted on S's own
  relations: together they are I_0 = N_0.
- Iteration k ≥ 1 counts the instantiations of S's rules whose positive atoms hold in I_{k-1},
  whose negated atoms have no match in I_{k-1}, whose comparisons hold and whose head
  evaluates — and of which at least one positive atom is in N_{k-1}. A rule without positive
  atoms counts as having one extra atom that is in N_0 only, so it fires at k = 1 only.
- N_k holds the heads with a non-zero count that are not in I_{k-1}, each with iteration k and
  that count; I_k = I_{k-1} ∪ N_k. The stratum is done when N_k is empty.
- In a stratum with a subsumption or a choice-domain, where the order of iterations decides
  which tuples stay, a rule's body literals that share no variable with its head (connected
  through shared variables, each `_` a variable of its own) and read the stratum are, as in
  Soufflé (its PartitionBodyLiterals), a nullary relation of the stratum of their own that
  the rule reads in their place: the rule starts one iteration after they first hold. As in
  Soufflé, an atom `r(_, ..., _)` has no variables where `r` is read no other way (its
  ReduceExistentials), and a nullary rule whose whole body would move, its relation's one
  clause and not an output, stays (its RemoveRelationCopies would undo the move).
- In such a stratum, as in Soufflé (a first pass, then its loop), iteration 1 counts only the
  rules that read none of the stratum, and iteration 2 the others over all that iteration 1
  left, the facts included: N_1 counts as the stratum's own tuples of I_1 for iteration 2.
"""
