// libFuzzer's driver, for a fuzzer that has its own main (a Swift executable always has one:
// SwiftPM links every Swift executable with `--defsym main=<Module>_main`, which clashes with
// the main of -sanitize=fuzzer's runtime). Defined in libclang_rt.fuzzer_no_main, which
// scripts/fuzz.sh links; declared only, so ordinary builds, which never call it, need nothing.
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
