// pmi1_protocol_test: runs the "pmi1" backend against a scripted fake PMI-1
// server (a forked child on a socketpair) to check its wire handling:
// hydra-style replies (no rc on some, extra keys), chunked allgather,
// and the errors for rc != 0, unexpected replies, a lost connection and a
// bad environment. Exits 0 when every scenario behaves as expected.
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "bootstrap/pmi_wire.hpp"

namespace
{

namespace wire = lci::bootstrap::pmi_wire;
using lci::bootstrap::backend_t;

// How the fake server answers.
struct fake_t {
  std::string init_reply =
      "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0";
  std::string maxes_reply =
      "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024";
  bool close_on_init = false;
  bool get_missing = false;
};

void send_line(int fd, const std::string& line)
{
  std::string data = line + "\n";
  if (write(fd, data.data(), data.size()) != (ssize_t)data.size()) _exit(3);
}

// The fake server, in the child. It plays rank 0's peers by answering a get
// for "lciS-R-C" with what rank 0 put under "lciS-0-C": every rank then
// appears to contribute rank 0's data.
[[noreturn]] void run_fake(int fd, const fake_t& fake)
{
  std::map<std::string, std::string> kvs;
  std::string buf;
  char chunk[4096];
  while (true) {
    std::size_t newline = buf.find('\n');
    if (newline == std::string::npos) {
      ssize_t n = read(fd, chunk, sizeof(chunk));
      if (n <= 0) _exit(0);
      buf.append(chunk, n);
      continue;
    }
    wire::message_t msg = wire::parse(buf.substr(0, newline));
    buf.erase(0, newline + 1);
    std::string cmd = wire::get(msg, "cmd");
    if (cmd == "init") {
      if (fake.close_on_init) _exit(0);
      send_line(fd, fake.init_reply);
    } else if (cmd == "get_maxes") {
      send_line(fd, fake.maxes_reply);
    } else if (cmd == "get_my_kvsname") {
      send_line(fd, "cmd=my_kvsname kvsname=kvs_42_0");  // hydra: no rc
    } else if (cmd == "put") {
      kvs[wire::get(msg, "key")] = wire::get(msg, "value");
      send_line(fd, "cmd=put_result rc=0 msg=success");
    } else if (cmd == "barrier_in") {
      send_line(fd, "cmd=barrier_out");
    } else if (cmd == "get") {
      std::string key = wire::get(msg, "key");
      std::size_t a = key.find('-'), b = key.rfind('-');
      std::string own = key.substr(0, a) + "-0" + key.substr(b);
      if (fake.get_missing || !kvs.count(own)) {
        send_line(fd, "cmd=get_result rc=1 msg=key_" + key + "_not_found");
      } else {
        send_line(fd, "cmd=get_result rc=0 msg=success value=" + kvs[own] +
                          " found=TRUE");
      }
    } else if (cmd == "finalize") {
      send_line(fd, "cmd=finalize_ack");
      _exit(0);
    } else {
      send_line(fd, "cmd=" + cmd + "_result rc=-1 msg=unknown");
    }
  }
}

// Runs `body` on a pmi1 backend connected to a fake server; returns the
// exception message, or "" on success.
std::string run_scenario(const fake_t& fake, const char* rank, const char* size,
                         const std::function<void(backend_t&)>& body,
                         const char* pmi_fd = nullptr)
{
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) std::abort();
  pid_t pid = fork();
  if (pid == 0) {
    close(sv[0]);
    run_fake(sv[1], fake);
  }
  close(sv[1]);
  setenv("LCI_ATTR_BOOTSTRAP_BACKEND", "pmi1", 1);
  setenv("PMI_FD", pmi_fd ? pmi_fd : std::to_string(sv[0]).c_str(), 1);
  setenv("PMI_RANK", rank, 1);
  setenv("PMI_SIZE", size, 1);
  unsetenv("PMI_PORT");
  unsetenv("PMI_ID");
  std::string error;
  try {
    auto backend = lci::bootstrap::get_backend();
    body(*backend);
  } catch (const std::exception& e) {
    error = e.what();
  }
  close(sv[0]);
  int status;
  waitpid(pid, &status, 0);
  return error;
}

int g_failures = 0;

void expect(const std::string& name, const std::string& error,
            const std::vector<std::string>& needles)
{
  bool ok = needles.empty() ? error.empty() : !error.empty();
  for (const auto& needle : needles) {
    if (error.find(needle) == std::string::npos) ok = false;
  }
  std::printf("%s: %s%s%s\n", ok ? "PASS" : "FAIL", name.c_str(),
              error.empty() ? "" : ": ", error.c_str());
  if (!ok) ++g_failures;
}

// allgather of `bytes` bytes; with the mirroring fake every slot must hold
// this rank's data.
void mirrored_allgather(backend_t& b, std::size_t bytes)
{
  std::vector<unsigned char> in(bytes), out(bytes * b.rank_n());
  for (std::size_t i = 0; i < bytes; ++i) in[i] = (unsigned char)(i * 37 + 5);
  b.allgather(in.data(), out.data(), bytes);
  for (int r = 0; r < b.rank_n(); ++r) {
    if (bytes > 0 &&
        std::memcmp(out.data() + r * bytes, in.data(), bytes) != 0) {
      throw std::runtime_error("allgather data mismatch in slot " +
                               std::to_string(r));
    }
  }
  b.barrier();
}

}  // namespace

int main()
{
  fake_t plain;
  expect("hydra-style replies, 5000-byte allgather",
         run_scenario(plain, "0", "3",
                      [](backend_t& b) {
                        if (b.rank_n() != 3 || b.rank_me() != 0) {
                          throw std::runtime_error("wrong rank/size");
                        }
                        mirrored_allgather(b, 5000);
                        mirrored_allgather(b, 0);
                      }),
         {});

  fake_t tiny_values;
  tiny_values.maxes_reply =
      "cmd=maxes kvsname_max=256 keylen_max=16 "
      "vallen_max=17";
  expect("vallen_max=17 (16 hex characters per chunk)",
         run_scenario(tiny_values, "0", "2",
                      [](backend_t& b) { mirrored_allgather(b, 100); }),
         {});

  fake_t bad_init;
  bad_init.init_reply = "cmd=response_to_init rc=-1 msg=version_mismatch";
  expect("init rc=-1", run_scenario(bad_init, "0", "2", [](backend_t&) {}),
         {"cmd=init", "rc=-1", "version_mismatch"});

  fake_t hang_up;
  hang_up.close_on_init = true;
  expect("connection lost during init",
         run_scenario(hang_up, "0", "2", [](backend_t&) {}),
         {"lost the connection", "cmd=init"});

  fake_t missing;
  missing.get_missing = true;
  expect("get rc=1",
         run_scenario(missing, "0", "2",
                      [](backend_t& b) { mirrored_allgather(b, 10); }),
         {"cmd=get", "rc=1", "not_found"});

  fake_t odd_maxes;
  odd_maxes.maxes_reply = "cmd=oops";
  expect("unexpected reply to get_maxes",
         run_scenario(odd_maxes, "0", "2", [](backend_t&) {}),
         {"unexpected reply", "cmd=get_maxes"});

  expect("PMI_RANK not a number",
         run_scenario(plain, "abc", "2", [](backend_t&) {}),
         {"PMI_RANK='abc'"});
  expect("PMI_RANK out of range",
         run_scenario(plain, "2", "2", [](backend_t&) {}), {"PMI_RANK='2'"});
  expect("PMI_FD not open",
         run_scenario(
             plain, "0", "2", [](backend_t&) {}, "987"),
         {"PMI_FD='987'", "not an open file descriptor"});

  std::printf("%d failed\n", g_failures);
  return g_failures == 0 ? 0 : 1;
}
