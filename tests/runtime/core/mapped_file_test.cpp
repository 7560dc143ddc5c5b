// A file that another program truncates while lmkit has it mapped: touching its vanished pages
// would end the process with SIGBUS; instead the read goes on over zeros and the file says it
// changed, naming itself. A SIGBUS that is not lmkit's still ends the process as it always did.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "runtime/core/error.h"
#include "runtime/core/mapped_file.h"
#include "tests/support/temporary_folder.h"

namespace lmkit {
namespace {

class MappedFileTest : public testing::TemporaryFolderTest {
 protected:
  MappedFileTest() : TemporaryFolderTest("lmkit_mapped_file_test_", /*create=*/true) {}
  std::string write(const std::string& name, const std::string& bytes) {
    const auto path = dir(name);
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
};

TEST_F(MappedFileTest, AFileTruncatedUnderItsMappingIsAnErrorNotACrash) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const auto path = write("shrinking.bin", std::string(4 * page, 'x'));
  const auto other_path = write("steady.bin", std::string(2 * page, 'y'));
  MappedFile file(path);
  MappedFile other(other_path);
  EXPECT_EQ(file.bytes(0, 1, "the start")[0], 'x');
  EXPECT_FALSE(file.changed());
  std::filesystem::resize_file(path, 100);  // another program cuts it short
  const auto tail = file.bytes(3 * page, page, "the tail");  // in bounds of the size it was opened with
  long sum = 0;
  for (const char c : tail) sum += c;  // touches the vanished pages
  EXPECT_EQ(sum, 0) << "the vanished pages read as zeros";
  EXPECT_TRUE(file.changed());
  try {
    file.check_unchanged();
    ADD_FAILURE() << "no error";
  } catch (const EnvironmentError& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find(path), std::string::npos) << text;
    EXPECT_NE(text.find("changed while lmkit read it"), std::string::npos) << text;
  }
  EXPECT_FALSE(other.changed());
  EXPECT_NO_THROW(other.check_unchanged());
  EXPECT_EQ(other.bytes(2 * page - 1, 1, "its last byte")[0], 'y');
}

// Each death test sets the SIGBUS disposition itself before lmkit installs its handler (in the
// child only: the statement runs there), so the result does not depend on what the test program's
// runtime put there first — a sanitizer's own handler, for one.
void set_bus_action(void (*handler)(int)) {
  struct sigaction action {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGBUS, &action, nullptr);
}

void exit_with_42(int) { ::_exit(42); }

TEST_F(MappedFileTest, ASigbusThatIsNotLmkitsStillEndsTheProcess) {
  const auto path = write("any.bin", "data");
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // Torch's threads may be running: re-execute, not fork
  EXPECT_EXIT(
      {
        set_bus_action(SIG_DFL);
        MappedFile file(path);  // lmkit's handler goes in over the default action
        ::raise(SIGBUS);
      },
      ::testing::KilledBySignal(SIGBUS), "");
}

TEST_F(MappedFileTest, ASigbusThatIsNotLmkitsGoesToTheHandlerThatWasThereBefore) {
  const auto path = write("any.bin", "data");
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        set_bus_action(exit_with_42);
        MappedFile file(path);
        ::raise(SIGBUS);
      },
      ::testing::ExitedWithCode(42), "");
}

}  // namespace
}  // namespace lmkit
