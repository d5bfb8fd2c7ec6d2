// Placeholder until the CLI lands (issue #3).
#include <cstdio>
int main() { std::puts("scalebench: CLI not built yet"); return 1; }
