// pmi_protocol_test: runs the "pmi1" and "pmi2" backends, and the PMI
// version negotiation of "auto", against a scripted fake process manager (a
// forked child on a socketpair) to check their wire handling: hydra-style
// replies (no rc on some, extra keys), Slurm-style ones (PMI-2 lengths
// left-aligned, a fullinit refused with rc=3 unless it has pmijobid,
// pmirank and threaded), chunked allgather, and the errors for rc != 0
// (with the server's errmsg), unexpected replies, a lost connection and a
// bad environment. Also the PMI-2 length parser on both framings.
// Exits 0 when every scenario behaves as expected.
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

#include "bootstrap/backends.hpp"
#include "bootstrap/bootstrap.hpp"
#include "bootstrap/pmi_wire.hpp"

namespace
{

namespace wire = lci::bootstrap::pmi_wire;
using lci::bootstrap::backend_t;

// How the fake server answers.
struct fake_t {
  // Reply to the first "cmd=init" whose pmi_version is 2 (PMI-1 format).
  // When it is not rc=0 pmi_version=2, the server stays in PMI-1 mode.
  std::string init2_reply =
      "cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0";
  std::string init1_reply =
      "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0";
  std::string maxes_reply =
      "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024";
  int fullinit_rank = -1;  // -1: echo pmirank
  int size = 3;
  bool close_on_init = false;
  bool get_missing = false;
  bool garbage_v2 = false;  // answer fullinit with a PMI-1 line
  // Slurm's pmi2 plugin: lengths left-aligned ("114   cmd=..."), and a
  // fullinit without pmijobid, pmirank or threaded refused with rc=3 and no
  // errmsg (as slurmstepd does)
  bool slurm = false;
  // nonzero: answer kvs-fence with this rc and errmsg (Slurm does when it
  // cannot forward the KVS)
  int fence_rc = 0;
  std::string fence_errmsg;
};

// What Slurm writes: the length left-aligned in its 6 characters.
std::string frame_left(const std::string& body)
{
  std::string length = std::to_string(body.size());
  return length + std::string(6 - length.size(), ' ') + body;
}

void write_all(int fd, const std::string& data)
{
  if (write(fd, data.data(), data.size()) != (ssize_t)data.size()) _exit(3);
}

// The key rank 0 used for the same allgather and chunk: the fake plays rank
// 0's peers by answering a get for "lciS-R-C" with rank 0's "lciS-0-C", so
// every rank appears to contribute rank 0's data.
std::string own_key(const std::string& key)
{
  std::size_t a = key.find('-'), b = key.rfind('-');
  return key.substr(0, a) + "-0" + key.substr(b);
}

// The fake server, in the child.
[[noreturn]] void run_fake(int fd, const fake_t& fake)
{
  std::map<std::string, std::string> kvs;
  std::string buf;
  bool v2 = false;
  char chunk[4096];
  auto more = [&] {
    ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n <= 0) _exit(0);
    buf.append(chunk, n);
  };
  while (true) {
    if (v2) {
      while (buf.size() < 6) more();
      std::size_t len = 0;
      if (!wire::parse_v2_length(buf.substr(0, 6), &len)) _exit(4);
      while (buf.size() < 6 + len) more();
      wire::message_t msg = wire::parse_v2(buf.substr(6, len));
      buf.erase(0, 6 + len);
      std::string cmd = wire::get(msg, "cmd");
      auto reply = [&](const std::string& body) {
        write_all(fd, fake.slurm ? frame_left(body) : wire::frame_v2(body));
      };
      if (cmd == "fullinit") {
        if (fake.garbage_v2) {
          write_all(fd, "cmd=fullinit-response rc=0\n");
          continue;
        }
        std::string rank = fake.fullinit_rank >= 0
                               ? std::to_string(fake.fullinit_rank)
                               : wire::get(msg, "pmirank");
        // Slurm requires the three fields and checks that threaded is
        // TRUE or FALSE; the client must pass PMI_JOBID through
        const char* jobid = std::getenv("PMI_JOBID");
        bool complete =
            msg.count("pmijobid") && msg.count("pmirank") &&
            (wire::get(msg, "threaded") == "TRUE" ||
             wire::get(msg, "threaded") == "FALSE") &&
            wire::get(msg, "pmijobid") == (jobid != nullptr ? jobid : "");
        std::string rc = fake.slurm && !complete ? "3" : "0";
        reply("cmd=fullinit-response;rc=" + rc +
              ";pmi-version=2;pmi-subversion=0;rank=" + rank +
              ";size=" + std::to_string(fake.size) +
              ";appnum=-1;debugged=FALSE;pmiverbose=FALSE;");
      } else if (cmd == "kvs-put") {
        kvs[wire::get(msg, "key")] = wire::get(msg, "value");
        reply("cmd=kvs-put-response;rc=0;");
      } else if (cmd == "kvs-fence") {
        if (fake.fence_rc != 0) {
          reply("cmd=kvs-fence-response;rc=" + std::to_string(fake.fence_rc) +
                ";errmsg=" + fake.fence_errmsg + ";");
        } else {
          reply("cmd=kvs-fence-response;rc=0;");
        }
      } else if (cmd == "kvs-get") {
        std::string own = own_key(wire::get(msg, "key"));
        if (fake.get_missing || !kvs.count(own)) {
          reply("cmd=kvs-get-response;found=FALSE;rc=0;");
        } else {
          reply("cmd=kvs-get-response;found=TRUE;value=" + kvs[own] + ";rc=0;");
        }
      } else if (cmd == "finalize") {
        reply("cmd=finalize-response;rc=0;");
        _exit(0);
      } else {
        reply("cmd=" + cmd + "-response;rc=-1;errmsg=unknown;");
      }
      continue;
    }
    std::size_t newline = buf.find('\n');
    if (newline == std::string::npos) {
      more();
      continue;
    }
    wire::message_t msg = wire::parse(buf.substr(0, newline));
    buf.erase(0, newline + 1);
    std::string cmd = wire::get(msg, "cmd");
    if (cmd == "init") {
      if (fake.close_on_init) _exit(0);
      if (wire::get(msg, "pmi_version") == "2") {
        write_all(fd, fake.init2_reply + "\n");
        v2 = fake.init2_reply.find("pmi_version=2") != std::string::npos &&
             fake.init2_reply.find("rc=0") != std::string::npos;
      } else {
        write_all(fd, fake.init1_reply + "\n");
      }
    } else if (cmd == "get_maxes") {
      write_all(fd, fake.maxes_reply + "\n");
    } else if (cmd == "get_my_kvsname") {
      write_all(fd, "cmd=my_kvsname kvsname=kvs_42_0\n");  // hydra: no rc
    } else if (cmd == "put") {
      kvs[wire::get(msg, "key")] = wire::get(msg, "value");
      write_all(fd, "cmd=put_result rc=0 msg=success\n");
    } else if (cmd == "barrier_in") {
      write_all(fd, "cmd=barrier_out\n");
    } else if (cmd == "get") {
      std::string key = wire::get(msg, "key");
      std::string own = own_key(key);
      if (fake.get_missing || !kvs.count(own)) {
        write_all(fd, "cmd=get_result rc=1 msg=key_" + key + "_not_found\n");
      } else {
        write_all(fd, "cmd=get_result rc=0 msg=success value=" + kvs[own] +
                          " found=TRUE\n");
      }
    } else if (cmd == "finalize") {
      write_all(fd, "cmd=finalize_ack\n");
      _exit(0);
    } else {
      write_all(fd, "cmd=" + cmd + "_result rc=-1 msg=unknown\n");
    }
  }
}

// Creates backend `name` connected to a fake server and runs `body` on it;
// returns the exception message, or "" on success. `*used` gets the name
// of the backend created.
std::string run_scenario(const fake_t& fake, const std::string& name,
                         const char* rank, const char* size,
                         const std::function<void(backend_t&)>& body,
                         const char* pmi_fd = nullptr,
                         std::string* used = nullptr,
                         const char* fake_jobid = nullptr)
{
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) std::abort();
  pid_t pid = fork();
  if (pid == 0) {
    close(sv[0]);
    // the PMI_JOBID the fake expects in fullinit, when it is not ours
    if (fake_jobid != nullptr) setenv("PMI_JOBID", fake_jobid, 1);
    run_fake(sv[1], fake);
  }
  close(sv[1]);
  setenv("PMI_FD", pmi_fd ? pmi_fd : std::to_string(sv[0]).c_str(), 1);
  setenv("PMI_RANK", rank, 1);
  setenv("PMI_SIZE", size, 1);
  unsetenv("PMI_PORT");
  unsetenv("PMI_ID");
  std::string error;
  try {
    std::unique_ptr<backend_t> backend = lci::bootstrap::create_backend(name);
    if (used) *used = backend->name();
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

void expect_equal(const std::string& name, const std::string& got,
                  const std::string& wanted)
{
  bool ok = got == wanted;
  std::printf("%s: %s: got '%s'%s\n", ok ? "PASS" : "FAIL", name.c_str(),
              got.c_str(), ok ? "" : (", expected '" + wanted + "'").c_str());
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

void rank0_of_3(backend_t& b)
{
  if (b.rank_n() != 3 || b.rank_me() != 0) {
    throw std::runtime_error("wrong rank/size " + std::to_string(b.rank_me()) +
                             "/" + std::to_string(b.rank_n()));
  }
  mirrored_allgather(b, 5000);
  mirrored_allgather(b, 0);
  mirrored_allgather(b, 256);
}

void pmi1_scenarios()
{
  fake_t plain;
  expect("pmi1: hydra-style replies, 5000-byte allgather",
         run_scenario(plain, "pmi1", "0", "3", rank0_of_3), {});

  fake_t tiny_values;
  tiny_values.maxes_reply =
      "cmd=maxes kvsname_max=256 keylen_max=16 "
      "vallen_max=17";
  expect("pmi1: vallen_max=17 (16 hex characters per chunk)",
         run_scenario(tiny_values, "pmi1", "0", "2",
                      [](backend_t& b) { mirrored_allgather(b, 100); }),
         {});

  fake_t bad_init;
  bad_init.init1_reply = "cmd=response_to_init rc=-1 msg=version_mismatch";
  expect("pmi1: init rc=-1",
         run_scenario(bad_init, "pmi1", "0", "2", [](backend_t&) {}),
         {"cmd=init", "rc=-1", "version_mismatch", "forced backend 'pmi1'"});

  fake_t hang_up;
  hang_up.close_on_init = true;
  expect("pmi1: connection lost during init",
         run_scenario(hang_up, "pmi1", "0", "2", [](backend_t&) {}),
         {"lost the connection", "cmd=init", "PMI_FD="});

  fake_t missing;
  missing.get_missing = true;
  expect("pmi1: get rc=1",
         run_scenario(missing, "pmi1", "0", "2",
                      [](backend_t& b) { mirrored_allgather(b, 10); }),
         {"cmd=get", "rc=1", "not_found"});

  fake_t odd_maxes;
  odd_maxes.maxes_reply = "cmd=oops";
  expect("pmi1: unexpected reply to get_maxes",
         run_scenario(odd_maxes, "pmi1", "0", "2", [](backend_t&) {}),
         {"unexpected reply", "cmd=get_maxes"});

  expect("pmi1: PMI_RANK not a number",
         run_scenario(plain, "pmi1", "abc", "2", [](backend_t&) {}),
         {"PMI_RANK='abc'"});
  expect("pmi1: PMI_RANK out of range",
         run_scenario(plain, "pmi1", "2", "2", [](backend_t&) {}),
         {"PMI_RANK='2'"});
  expect("pmi1: PMI_FD not open",
         run_scenario(
             plain, "pmi1", "0", "2", [](backend_t&) {}, "987"),
         {"PMI_FD='987'", "not an open file descriptor"});
}

void pmi2_scenarios()
{
  fake_t plain;
  expect("pmi2: 5000-byte allgather",
         run_scenario(plain, "pmi2", "0", "3", rank0_of_3), {});

  fake_t wrong_rank;
  wrong_rank.fullinit_rank = 2;
  expect("pmi2: fullinit answers another rank",
         run_scenario(wrong_rank, "pmi2", "0", "3", [](backend_t&) {}),
         {"fullinit", "rank=2", "PMI_RANK=0"});

  fake_t wrong_size;
  expect("pmi2: fullinit size differs from PMI_SIZE",
         run_scenario(wrong_size, "pmi2", "0", "4", [](backend_t&) {}),
         {"size=3", "PMI_SIZE=4"});

  fake_t missing;
  missing.get_missing = true;
  expect("pmi2: kvs-get found=FALSE",
         run_scenario(missing, "pmi2", "0", "3",
                      [](backend_t& b) { mirrored_allgather(b, 10); }),
         {"cmd=kvs-get", "not found"});

  fake_t v1_only;
  v1_only.init2_reply =
      "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0";
  expect("pmi2 forced on a PMI-1 server",
         run_scenario(v1_only, "pmi2", "0", "3", [](backend_t&) {}),
         {"does not speak PMI-2", "pmi_version=1"});

  fake_t garbage;
  garbage.garbage_v2 = true;
  expect("pmi2: PMI-1 line where a PMI-2 reply belongs",
         run_scenario(garbage, "pmi2", "0", "3", [](backend_t&) {}),
         {"not a PMI-2 message", "fullinit"});

  fake_t hang_up;
  hang_up.close_on_init = true;
  expect("pmi2: connection lost during init",
         run_scenario(hang_up, "pmi2", "0", "3", [](backend_t&) {}),
         {"lost the connection", "cmd=init"});

  fake_t fence_error;
  fence_error.fence_rc = 14;
  fence_error.fence_errmsg = "mpi/pmi2: failed to send temp kvs";
  expect("pmi2: kvs-fence rc=14 with an errmsg",
         run_scenario(fence_error, "pmi2", "0", "3",
                      [](backend_t& b) { mirrored_allgather(b, 10); }),
         {"refused 'cmd=kvs-fence;'", "rc=14 (PMI2_ERR_OTHER)",
          "errmsg='mpi/pmi2: failed to send temp kvs'"});
}

// Slurm's pmi2 plugin (srun --mpi=pmi2), as Slurm 22.05 answers.
void slurm_scenarios()
{
  fake_t slurm;
  slurm.slurm = true;
  setenv("PMI_JOBID", "4242.0", 1);
  expect("slurm pmi2: left-aligned lengths, full fullinit, allgather",
         run_scenario(slurm, "pmi2", "0", "3", rank0_of_3), {});
  std::string used;
  expect("slurm auto: left-aligned lengths",
         run_scenario(slurm, "auto", "0", "3", rank0_of_3, nullptr, &used), {});
  expect_equal("auto picks pmi2 under Slurm", used, "pmi2");
  // without PMI_JOBID the field is sent empty (the fake then expects "")
  unsetenv("PMI_JOBID");
  expect("slurm pmi2: no PMI_JOBID, pmijobid sent empty",
         run_scenario(slurm, "pmi2", "0", "3", rank0_of_3), {});

  // A fullinit Slurm refuses: the error names the request and the code,
  // never "not a PMI-2 message". The fake refuses when pmijobid is not
  // PMI_JOBID, which the client reads before the fake does: so set it in
  // the fake's child only.
  fake_t refused = slurm;
  expect("slurm pmi2: fullinit refused with rc=3 and no errmsg",
         run_scenario(
             refused, "pmi2", "0", "3", [](backend_t&) {}, nullptr, nullptr,
             "9.0"),
         {"refused 'cmd=fullinit;pmijobid=;pmirank=0;threaded=FALSE;'",
          "rc=3 (PMI2_ERR_INVALID_ARG)", "without an errmsg"});
}

// The PMI-2 length prefix as each server writes it.
void framing_scenarios()
{
  struct case_t {
    const char* prefix;
    bool ok;
    std::size_t length;
  };
  const case_t cases[] = {
      {"   114", true, 114},  // hydra: right-aligned
      {"114   ", true, 114},  // Slurm: left-aligned
      {" 114  ", true, 114},  // padded on both sides
      {"999999", true, 999999}, {"0     ", true, 0},   {"     0", true, 0},
      {"      ", false, 0},     {"1 14  ", false, 0},  {"  -14 ", false, 0},
      {"cmd=fu", false, 0},     {"11\n   ", false, 0}, {"114", false, 0},
      {"1140000", false, 0},
  };
  for (const case_t& c : cases) {
    std::size_t length = 7;
    bool ok = wire::parse_v2_length(c.prefix, &length);
    bool pass = ok == c.ok && (!ok || length == c.length);
    std::printf("%s: parse_v2_length('%s') = %s", pass ? "PASS" : "FAIL",
                c.prefix, ok ? "ok" : "refused");
    if (ok) std::printf(" %zu", length);
    std::printf("\n");
    if (!pass) ++g_failures;
  }
  std::size_t back = 0;
  std::string framed = wire::frame_v2("cmd=finalize;");
  bool pass = framed == "    13cmd=finalize;" &&
              wire::parse_v2_length(framed.substr(0, 6), &back) && back == 13;
  std::printf("%s: frame_v2 writes a right-aligned length\n",
              pass ? "PASS" : "FAIL");
  if (!pass) ++g_failures;
}

void negotiation_scenarios()
{
  std::string used;
  fake_t both;
  expect("auto: a PMI-2 server",
         run_scenario(both, "auto", "0", "3", rank0_of_3, nullptr, &used), {});
  expect_equal("auto picks pmi2 when offered", used, "pmi2");

  fake_t lcrun_like;  // accepts any init as PMI-1
  lcrun_like.init2_reply =
      "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0";
  used.clear();
  expect("auto: a server that answers PMI-1",
         run_scenario(lcrun_like, "auto", "0", "3", rank0_of_3, nullptr, &used),
         {});
  expect_equal("auto falls back to pmi1", used, "pmi1");

  fake_t strict;  // refuses PMI-2, then accepts a PMI-1 init
  strict.init2_reply =
      "cmd=response_to_init rc=-1 pmi_version=1 pmi_subversion=1";
  used.clear();
  expect("auto: a server that refuses PMI-2",
         run_scenario(strict, "auto", "0", "3", rank0_of_3, nullptr, &used),
         {});
  expect_equal("auto retries with pmi1", used, "pmi1");
}

}  // namespace

int main()
{
  unsetenv("PMIX_RANK");
  unsetenv("PMIX_NAMESPACE");
  unsetenv("PMI_JOBID");
  pmi1_scenarios();
  pmi2_scenarios();
  slurm_scenarios();
  framing_scenarios();
  negotiation_scenarios();
  std::printf("%d failed\n", g_failures);
  return g_failures == 0 ? 0 : 1;
}
