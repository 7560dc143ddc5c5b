// The test program's main: GoogleTest's own, and two aids for a crash at the process's end, which
// no test can catch (the GPU determinism tests once died there, after their last line):
//   LMKIT_TEST_MILESTONES=1   milestone lines on stderr when the tests have returned, and in the
//                             teardown once the statics made during the tests are destroyed (Torch's
//                             and CUDA's lazily made ones among them) and before those made before
//                             main: a log shows whether a crash came in the tests or in which part
//                             of the teardown;
//   LMKIT_TEST_QUICK_EXIT=1   ends the process right after the tests and their report with
//                             std::_Exit(result): no atexit handlers, no static destructors, no
//                             library teardown. scripts/gpu/run_on_gpu.sh's diagnosis reruns a
//                             crashed test with and without it: a crash that goes away with it is
//                             in the teardown.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

bool switched_on(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && std::strcmp(value, "1") == 0;
}

void statics_of_the_tests_destroyed() {
  std::fprintf(stderr, "[ milestone ] exit: the statics made during the tests are destroyed; those made before main next\n");
}

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  // At exit, handlers and static destructors run in the reverse order of their registration: this
  // one after the statics first made during the tests, before those made before main.
  if (switched_on("LMKIT_TEST_MILESTONES")) std::atexit(statics_of_the_tests_destroyed);
  const int result = RUN_ALL_TESTS();
  const bool quick = switched_on("LMKIT_TEST_QUICK_EXIT");
  if (switched_on("LMKIT_TEST_MILESTONES")) {
    std::fprintf(stderr, "[ milestone ] main: the tests returned %d; %s\n", result,
                 quick ? "quick exit (std::_Exit), no teardown" : "atexit handlers, static destructors and library teardown next");
  }
  if (quick) {
    std::fflush(nullptr);
    std::_Exit(result);
  }
  return result;
}
