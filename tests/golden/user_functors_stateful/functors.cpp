// Stateful user-defined functors as Soufflé calls them: the symbol and record tables first,
// every argument and the result a RamDomain (a symbol's number in the table). Built against
// Soufflé's headers for its golden output only: the engine refuses stateful C functors and
// runs program.dl with functors.py instead.
#include "souffle/SouffleFunctor.h"

#include <string>

extern "C" {

souffle::RamDomain mycat(souffle::SymbolTable* symbols, souffle::RecordTable*,
        souffle::RamDomain a, souffle::RamDomain b) {
    return symbols->encode(symbols->decode(a) + symbols->decode(b));
}

souffle::RamDomain twice(souffle::SymbolTable*, souffle::RecordTable*, souffle::RamDomain x) {
    return 2 * x;
}

souffle::RamDomain one(souffle::SymbolTable*, souffle::RecordTable*) {
    return 1;
}

souffle::RamDomain initial(souffle::SymbolTable* symbols, souffle::RecordTable*,
        souffle::RamDomain s) {
    return symbols->encode(symbols->decode(s).substr(0, 1));
}
}
