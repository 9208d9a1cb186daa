/* User-defined functors of tests/golden/user_functors/program.dl, as Soufflé's 64-bit build
 * calls them: number is int64_t, unsigned uint64_t, float double, symbol const char*. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

int64_t foo(int64_t n, const char *s) { return n + (int64_t)strlen(s); }

const char *hoo(void) { return "Hello world!"; }

const char *sign(int64_t n) { return n < 0 ? "NEG" : n == 0 ? "ZERO" : "POS"; }

uint64_t factorial(uint64_t x) {
    uint64_t accum = 1;
    while (x > 1) {
        accum *= x;
        --x;
    }
    return accum;
}

int64_t rnd(double x) { return (int64_t)round(x); }

double incr(double x) { return x + 1.0; }

int64_t succ(int64_t x) { return x + 1; }

const char *concat(double f, int64_t i, uint64_t u, const char *s) {
    static char buffer[256];
    snprintf(buffer, sizeof buffer, "%f%lld%llu%s", f, (long long)i, (unsigned long long)u, s);
    return buffer;
}

const char *shout(const char *s) {
    static char buffer[256];
    size_t i = 0;
    for (; s[i] != '\0' && i + 2 < sizeof buffer; ++i) {
        buffer[i] = (s[i] >= 'a' && s[i] <= 'z') ? (char)(s[i] - 'a' + 'A') : s[i];
    }
    buffer[i] = '!';
    buffer[i + 1] = '\0';
    return buffer;
}

int64_t weight(int64_t x, int64_t y) { return x * 10 + y; }
