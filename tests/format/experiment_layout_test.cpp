// Experiment directories: names, joining a live or same-run directory, refusing a finished one.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <fstream>

#include "format/experiment_layout.h"
#include "support/temp_dir.h"

using namespace sigmatrace::format;

TEST(ExperimentLayout, FileNamesCarryHostRankAndPid) {
  EXPECT_EQ(trace_file_name("node7", 3, 4242), "node7.r3.p4242.sgt");
  EXPECT_EQ(trace_file_name("node7", -1, 4242), "node7.p4242.sgt");
}

TEST(ExperimentLayout, CreatesThenJoinsTheSameRun) {
  sigmatrace::test::TempDir t;
  std::string dir = t / "a/b/exp";
  EXPECT_EQ(create_or_join_experiment(dir, "job1", false).decision, JoinDecision::created);
  ASSERT_TRUE(write_manifest(dir, "{\n  \"run_id\": \"job1\"\n}\n"));
  EXPECT_EQ(manifest_run_id(dir), "job1");
  std::ofstream(dir + "/h.p1.sgt") << "x";
  EXPECT_EQ(create_or_join_experiment(dir, "job1", false).decision, JoinDecision::joined);
}

TEST(ExperimentLayout, RefusesAFinishedRunUnlessForced) {
  sigmatrace::test::TempDir t;
  std::string dir = t / "exp";
  create_or_join_experiment(dir, "old", false);
  write_manifest(dir, "{\n  \"run_id\": \"old\"\n}\n");
  std::ofstream(dir + "/h.p1.sgt") << "x";
  JoinResult r = create_or_join_experiment(dir, "new", false);
  EXPECT_EQ(r.decision, JoinDecision::refused);
  EXPECT_NE(r.message.find("finished earlier run (run old)"), std::string::npos);
  EXPECT_EQ(create_or_join_experiment(dir, "new", true).decision, JoinDecision::joined);
}

TEST(ExperimentLayout, ALiveRunIsJoinedWhateverItsId) {
  sigmatrace::test::TempDir t;
  std::string dir = t / "exp";
  create_or_join_experiment(dir, "server", false);
  write_manifest(dir, "{\n  \"run_id\": \"server\"\n}\n");
  std::ofstream(dir + "/h.p1.sgt") << "x";
  pid_t child = fork();
  if (child == 0) {  // a "server" process holding its live lock
    int fd = take_live_lock(dir, "h", getpid());
    sleep(5);
    _exit(fd >= 0 ? 0 : 1);
  }
  bool live = false;
  for (int i = 0; i < 200 && !live; ++i, usleep(10000)) live = experiment_is_live(dir);
  EXPECT_TRUE(live);
  EXPECT_EQ(create_or_join_experiment(dir, "client", false).decision, JoinDecision::joined);
  std::string err;
  EXPECT_FALSE(remove_finished_experiment(dir, &err));
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_FALSE(experiment_is_live(dir));  // a killed holder releases its lock
  EXPECT_EQ(create_or_join_experiment(dir, "client", false).decision, JoinDecision::refused);
  EXPECT_TRUE(remove_finished_experiment(dir, &err));
  EXPECT_EQ(access((dir + "/h.p1.sgt").c_str(), F_OK), -1);
}

TEST(ExperimentLayout, EmptyExistingDirectoryIsUsed) {
  sigmatrace::test::TempDir t;
  mkdir((t / "exp").c_str(), 0755);
  EXPECT_EQ(create_or_join_experiment(t / "exp", "x", false).decision, JoinDecision::joined);
}

TEST(ExperimentLayout, APathThatIsAFileIsAnError) {
  sigmatrace::test::TempDir t;
  std::ofstream(t / "f") << "x";
  JoinResult r = create_or_join_experiment(t / "f", "x", false);
  EXPECT_EQ(r.decision, JoinDecision::failed);
  EXPECT_NE(r.message.find("not a directory"), std::string::npos);
}
