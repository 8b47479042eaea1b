// lci_info: what this LCI build offers and what it would do on this machine,
// in the manner of fi_info and ucx_info: version and commit, backends
// compiled in (net/registry.hpp), libfabric providers usable now, the bootstrap
// backend the launcher environment selects and why, the node-local transport,
// and every attribute with its default and current value. --json for scripts;
// --check runs a one-rank self-test and names what is wrong with its fix.
//
//   lci_info [--json] [--verbose]
//   lci_info --check [--json]
#include <fcntl.h>
#include <getopt.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <lci.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "lci_info_attrs.hpp"
#include "lci_info_build.hpp"
#include "net/registry.hpp"

namespace
{

const char* const kUsage =
    "usage: lci_info [--json] [--verbose]\n"
    "       lci_info --check [--json]\n"
    "\n"
    "Prints the LCI version and commit, the backends compiled in, the\n"
    "libfabric providers usable now, the bootstrap backend the launcher\n"
    "environment selects and why, the node-local transport, and every\n"
    "attribute (LCI_ATTR_*) with its default and current value.\n"
    "\n"
    "  --check     run a one-rank self-test and the environment checks;\n"
    "              exit 1 when one fails, naming the fix\n"
    "  --json      the same as one JSON object\n"
    "  --verbose   the attributes' full help instead of one line\n"
    "  --version   print the version and exit\n"
    "  --help      this text\n";

// --- JSON output ----------------------------------------------------------

std::string json_str(const std::string& s)
{
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

// --- probes ---------------------------------------------------------------

struct provider_t {
  std::string name;
  bool usable = false;
  std::string detail;  // the error when not usable
};

std::vector<std::string> split(const std::string& s, char sep)
{
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(s);
  while (std::getline(in, item, sep))
    if (!item.empty()) out.push_back(item);
  return out;
}

const lci_info_attr_t* find_attr(const char* name)
{
  for (const lci_info_attr_t& a : kAttrs)
    if (std::strcmp(a.name, name) == 0) return &a;
  return nullptr;
}

// A one-rank runtime on the provider, through the library's own selection
// (ofi backend, local bootstrap): usable exactly when a program could use it.
provider_t probe_provider(const std::string& name)
{
  provider_t p;
  p.name = name;
  try {
    lci::runtime_t rt = lci::alloc_runtime_x()
                            .backend("ofi")
                            .ofi_provider_name(name)
                            .bootstrap_backend("local")();
    lci::free_runtime(&rt);
    p.usable = true;
  } catch (const std::exception& e) {
    // the library's message names the provider and the attribute; the
    // reason alone fits a listing
    p.detail = e.what();
    const std::string marker = "is not available: ";
    size_t at = p.detail.find(marker);
    if (at != std::string::npos) {
      p.detail = p.detail.substr(at + marker.size());
      p.detail = p.detail.substr(0, p.detail.find(" ("));
    }
  }
  return p;
}

std::vector<provider_t> probe_providers()
{
  std::vector<provider_t> out;
  if (!lci::net::find_backend("ofi")) return out;  // nothing to probe with
  const lci_info_attr_t* a = find_attr("ofi_provider_name");
  if (!a) return out;
  for (const std::string& name : split(a->choices, ','))
    if (name != "auto") out.push_back(probe_provider(name));
  return out;
}

struct shm_check_t {
  bool ok = false;
  std::string detail;
  unsigned long long free_bytes = 0;
};

// Creates, sizes, maps and removes a segment the way the native backend does.
shm_check_t check_dev_shm()
{
  shm_check_t c;
  struct statvfs vfs;
  if (statvfs("/dev/shm", &vfs) == 0)
    c.free_bytes = static_cast<unsigned long long>(vfs.f_bavail) * vfs.f_frsize;
  const std::string name = "/lci-info-" + std::to_string(getpid());
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) {
    c.detail = std::string("shm_open: ") + std::strerror(errno);
    return c;
  }
  bool sized = ftruncate(fd, 1 << 20) == 0;
  int err = errno;
  void* p =
      sized ? mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
            : MAP_FAILED;
  if (sized && p == MAP_FAILED) err = errno;
  close(fd);
  shm_unlink(name.c_str());
  if (!sized || p == MAP_FAILED) {
    c.detail =
        std::string(sized ? "mmap: " : "ftruncate: ") + std::strerror(err);
    return c;
  }
  // touching the pages is what fails when /dev/shm is full
  std::memset(p, 1, 1 << 20);
  munmap(p, 1 << 20);
  c.ok = true;
  return c;
}

struct cma_check_t {
  bool allowed = false;
  std::string detail;
};

// Single-copy transfers between ranks (process_vm_readv/writev) need ptrace
// permission between sibling processes: Yama's ptrace_scope 0, or the
// CAP_SYS_PTRACE capability (root) at scopes 1 and 2.
cma_check_t check_cma()
{
  cma_check_t c;
  int scope = 0;
  std::ifstream f("/proc/sys/kernel/yama/ptrace_scope");
  if (!(f >> scope)) {
    c.allowed = true;
    c.detail = "no Yama ptrace restrictions";
    return c;
  }
  const bool root = geteuid() == 0;
  c.allowed = scope == 0 || (scope < 3 && root);
  c.detail = "kernel.yama.ptrace_scope = " + std::to_string(scope) +
             (scope == 0  ? ""
              : c.allowed ? " (allowed: running as root)"
                          : " (siblings may not read each other's memory)");
  return c;
}

// --- the self-test --------------------------------------------------------

struct step_t {
  std::string name;
  bool ok;
  std::string detail;
};

// One rank talking to itself on the default backend: send/recv, an active
// message through a completion queue, a put and a get on registered memory.
std::vector<step_t> self_test()
{
  std::vector<step_t> steps;
  auto run = [&](const char* name, auto&& body) {
    try {
      std::string detail = body();
      steps.push_back({name, detail.empty(), detail});
    } catch (const std::exception& e) {
      steps.push_back({name, false, e.what()});
    }
    return steps.back().ok;
  };
  bool up = run("runtime on the default backend", [] {
    lci::g_runtime_init_x().bootstrap_backend("local")();
    return std::string();
  });
  if (!up) return steps;
  run("send and receive to self", [] {
    int in = 0, out = 4242;
    lci::comp_t sync = lci::alloc_sync();
    lci::status_t r;
    do {
      r = lci::post_recv(0, &in, sizeof(in), 11, sync);
      lci::progress();
    } while (r.is_retry());
    lci::post_send(0, &out, sizeof(out), 11, lci::COMP_NULL);
    if (r.is_posted()) lci::sync_wait(sync, &r);
    lci::free_comp(&sync);
    return in == 4242 ? std::string()
                      : "received " + std::to_string(in) + ", sent 4242";
  });
  run("active message through a completion queue", [] {
    lci::comp_t cq = lci::alloc_cq();
    lci::rcomp_t rcomp = lci::register_rcomp(cq);
    char msg[64] = "lci_info";
    lci::status_t s;
    do {
      s = lci::post_am(0, msg, sizeof(msg), lci::COMP_NULL, rcomp);
      lci::progress();
    } while (s.is_retry());
    lci::status_t got;
    do {
      lci::progress();
      got = lci::cq_pop(cq);
    } while (got.is_retry());
    std::string detail;
    if (got.size != sizeof(msg) ||
        std::strcmp(static_cast<char*>(got.buffer), "lci_info") != 0)
      detail = "the message arrived altered (" + std::to_string(got.size) +
               " bytes)";
    std::free(got.buffer);
    lci::deregister_rcomp(rcomp);
    lci::free_comp(&cq);
    return detail;
  });
  run("put and get on registered memory", [] {
    std::vector<char> target(8192, 0), source(8192, 'x'), back(8192, 0);
    lci::mr_t mr = lci::register_memory(target.data(), target.size());
    lci::rmr_t rmr = lci::get_rmr(mr);
    lci::status_t s;
    do {
      s = lci::post_put(0, source.data(), source.size(), lci::COMP_NULL, 0,
                        rmr);
      lci::progress();
    } while (s.is_retry());
    do {
      s = lci::post_get(0, back.data(), back.size(), lci::COMP_NULL, 0, rmr);
      lci::progress();
    } while (s.is_retry());
    lci::deregister_memory(&mr);
    if (target != source) return std::string("the put did not land");
    if (back != source) return std::string("the get read other bytes");
    return std::string();
  });
  run("finalize", [] {
    lci::g_runtime_fina();
    return std::string();
  });
  return steps;
}

// --- output ---------------------------------------------------------------

std::string one_line(const std::string& help)
{
  const size_t limit = 100;
  size_t cut = help.find("; ");
  if (cut == std::string::npos || cut > limit) cut = help.find(". ");
  if (cut != std::string::npos && cut <= limit) return help.substr(0, cut);
  if (help.size() <= limit) return help;
  return help.substr(0, limit - 3) + "...";
}

std::string current_value(const lci_info_attr_t& a, bool* from_env)
{
  const char* v = std::getenv(a.env);
  *from_env = v != nullptr;
  return v ? v : a.default_value;
}

// "libfabric 1.17", or empty when this build has no ofi backend
std::string fabric_version()
{
  const lci::net::backend_entry_t* ofi = lci::net::find_backend("ofi");
  return ofi ? ofi->library : "";
}

// The backends built in, each with its summary (and library), then the
// known ones this build left out and why.
std::string describe_backends()
{
  std::string out;
  for (const lci::net::backend_entry_t& b : lci::net::backends()) {
    out += (out.empty() ? "" : ", ") + std::string(b.name) + " (";
    if (*b.library) out += std::string(b.library) + ", ";
    out += std::string(b.summary) + ")";
  }
  std::string missing;
  for (const char* name : {"ofi", "ibv", "hybrid"}) {
    const std::string why = lci::net::why_not_built(name);
    if (!why.empty())
      missing +=
          (missing.empty() ? "" : ", ") + std::string(name) + " (" + why + ")";
  }
  return missing.empty() ? out : out + "; not built in: " + missing;
}

struct report_t {
  std::vector<provider_t> providers;
  shm_check_t shm;
  cma_check_t cma;
  std::string bootstrap;
};

std::vector<std::string> compiled_bootstraps()
{
  std::vector<std::string> out = {"local", "pmi1", "pmi2"};
  if (kHavePmix) out.push_back("pmix");
  if (kHaveMpi) out.push_back("mpi");
  return out;
}

void print_text(const report_t& r, bool verbose)
{
  std::printf("LCI %s (commit %s)\n", kVersion, kCommit);
  std::printf("network backends: %s\n", describe_backends().c_str());
  std::string boots;
  for (const std::string& b : compiled_bootstraps())
    boots += (boots.empty() ? "" : ", ") + b;
  std::printf("bootstrap backends: %s%s%s\n", boots.c_str(),
              kHavePmix ? "" : " (no pmix: built without libpmix)",
              kHaveMpi ? "" : " (no mpi: built without -DLCI_WITH_MPI=ON)");
  std::printf("bootstrap here: %s\n", r.bootstrap.c_str());
  // what hybrid and auto take for ranks on other nodes, and why not ibv
  std::string passed_over;
  const lci::net::backend_entry_t* net =
      lci::net::network_backend(&passed_over);
  std::printf("network backend for other nodes: %s%s\n",
              net ? net->name : "none",
              passed_over.empty() ? "" : (" (" + passed_over + ")").c_str());
  std::printf("libfabric providers (for ranks on other nodes):%s\n",
              lci::net::find_backend("ofi")
                  ? ""
                  : (" none: " + lci::net::why_not_built("ofi")).c_str());
  for (const provider_t& p : r.providers)
    std::printf(
        "  %-8s %s\n", p.name.c_str(),
        p.usable ? "usable" : ("not usable: " + one_line(p.detail)).c_str());
  std::printf("node-local transport: native shared memory (/dev/shm %s",
              r.shm.ok ? "writable" : "NOT usable");
  if (r.shm.free_bytes)
    std::printf(", %.1f GiB free", r.shm.free_bytes / double(1ull << 30));
  std::printf("); single-copy RMA (CMA) %s: %s\n",
              r.cma.allowed ? "allowed" : "not allowed", r.cma.detail.c_str());
  std::printf("attributes (environment variable, default, current%s):\n",
              verbose ? ", help" : ", one-line help");
  for (const lci_info_attr_t& a : kAttrs) {
    bool from_env = false;
    std::string cur = current_value(a, &from_env);
    std::printf("  %s.%s\n    %s = %s (default %s%s)\n    %s\n", a.resource,
                a.name, a.env, cur.c_str(), a.default_value,
                from_env ? ", set in the environment" : "",
                verbose ? a.help : one_line(a.help).c_str());
  }
}

void print_json(const report_t& r, const std::vector<step_t>* steps,
                const std::vector<std::string>* problems)
{
  std::printf("{\n  \"version\": %s,\n  \"commit\": %s,\n",
              json_str(kVersion).c_str(), json_str(kCommit).c_str());
  const std::string fabric = fabric_version();
  std::printf("  \"libfabric\": %s,\n",
              fabric.empty() ? "null" : json_str(fabric.substr(10)).c_str());
  std::printf("  \"network_backends\": [");
  const auto& built = lci::net::backends();
  for (size_t i = 0; i < built.size(); ++i)
    std::printf("%s%s", i ? ", " : "", json_str(built[i].name).c_str());
  std::printf("],\n  \"backends_not_built\": {");
  bool first_missing = true;
  for (const char* name : {"ofi", "ibv", "hybrid"}) {
    const std::string why = lci::net::why_not_built(name);
    if (why.empty()) continue;
    std::printf("%s%s: %s", first_missing ? "" : ", ", json_str(name).c_str(),
                json_str(why).c_str());
    first_missing = false;
  }
  std::printf("},\n");
  std::string passed_over;
  const lci::net::backend_entry_t* net =
      lci::net::network_backend(&passed_over);
  std::printf("  \"network_backend_other_nodes\": %s,\n",
              net ? json_str(net->name).c_str() : "null");
  std::printf("  \"network_backend_why_not_ibv\": %s,\n",
              passed_over.empty() ? "null" : json_str(passed_over).c_str());
  std::printf("  \"bootstrap_backends\": [");
  const std::vector<std::string> boots = compiled_bootstraps();
  for (size_t i = 0; i < boots.size(); ++i)
    std::printf("%s%s", i ? ", " : "", json_str(boots[i]).c_str());
  std::printf("],\n  \"bootstrap_here\": %s,\n", json_str(r.bootstrap).c_str());
  std::printf("  \"providers\": [");
  for (size_t i = 0; i < r.providers.size(); ++i) {
    const provider_t& p = r.providers[i];
    std::printf("%s\n    {\"name\": %s, \"usable\": %s, \"detail\": %s}",
                i ? "," : "", json_str(p.name).c_str(),
                p.usable ? "true" : "false", json_str(p.detail).c_str());
  }
  std::printf("\n  ],\n");
  std::printf(
      "  \"dev_shm\": {\"usable\": %s, \"free_bytes\": %llu, "
      "\"detail\": %s},\n",
      r.shm.ok ? "true" : "false", r.shm.free_bytes,
      json_str(r.shm.detail).c_str());
  std::printf("  \"cma\": {\"allowed\": %s, \"detail\": %s},\n",
              r.cma.allowed ? "true" : "false", json_str(r.cma.detail).c_str());
  std::printf("  \"attributes\": [");
  bool first = true;
  for (const lci_info_attr_t& a : kAttrs) {
    bool from_env = false;
    std::string cur = current_value(a, &from_env);
    std::printf(
        "%s\n    {\"resource\": %s, \"name\": %s, \"type\": %s, "
        "\"env\": %s, \"default\": %s, \"current\": %s, "
        "\"from_env\": %s, \"help\": %s}",
        first ? "" : ",", json_str(a.resource).c_str(),
        json_str(a.name).c_str(), json_str(a.type).c_str(),
        json_str(a.env).c_str(), json_str(a.default_value).c_str(),
        json_str(cur).c_str(), from_env ? "true" : "false",
        json_str(a.help).c_str());
    first = false;
  }
  std::printf("\n  ]");
  if (steps) {
    std::printf(",\n  \"self_test\": [");
    for (size_t i = 0; i < steps->size(); ++i) {
      const step_t& s = (*steps)[i];
      std::printf("%s\n    {\"step\": %s, \"ok\": %s, \"detail\": %s}",
                  i ? "," : "", json_str(s.name).c_str(),
                  s.ok ? "true" : "false", json_str(s.detail).c_str());
    }
    std::printf("\n  ],\n  \"problems\": [");
    for (size_t i = 0; i < problems->size(); ++i)
      std::printf("%s\n    %s", i ? "," : "", json_str((*problems)[i]).c_str());
    std::printf("\n  ],\n  \"ok\": %s", problems->empty() ? "true" : "false");
  }
  std::printf("\n}\n");
}

// What is wrong here, each with its fix; warnings do not fail the check.
void diagnose(const report_t& r, const std::vector<step_t>& steps,
              std::vector<std::string>* problems,
              std::vector<std::string>* warnings)
{
  if (!r.shm.ok)
    problems->push_back(
        "/dev/shm is not usable (" + r.shm.detail +
        "): the native shared-memory transport, the default on one node, "
        "needs it. Fix: mount a tmpfs there (mount -t tmpfs tmpfs /dev/shm) "
        "with room for the segments" +
        std::string(lci::net::find_backend("ofi")
                        ? ", or run with LCI_ATTR_BACKEND=ofi"
                        : ""));
  bool any = false;
  for (const provider_t& p : r.providers) any = any || p.usable;
  if (!lci::net::find_backend("ofi"))
    warnings->push_back(
        "this build has no libfabric (" + lci::net::why_not_built("ofi") +
        "): ranks on other nodes are reached through the socket backend "
        "(TCP) only. Fix, for InfiniBand, Slingshot or EFA: rebuild LCI "
        "with libfabric (-DLCI_WITH_OFI=ON)");
  else if (!any)
    problems->push_back(
        "no libfabric provider is usable: ranks on other nodes cannot be "
        "reached. Fix: install libfabric's providers (Debian: libfabric1), "
        "check FI_PROVIDER and FI_*_IFACE, and name the one to use with "
        "LCI_ATTR_OFI_PROVIDER_NAME");
  if (!r.cma.allowed)
    warnings->push_back(
        "single-copy RMA between ranks is not allowed (" + r.cma.detail +
        "): large puts and gets copy through the rings instead (correct, "
        "slower). Fix: sysctl kernel.yama.ptrace_scope=0, or set "
        "LCI_ATTR_SHM_CMA=0 to say you know");
  if (r.bootstrap.rfind("none", 0) == 0)
    problems->push_back("the launcher environment is inconsistent: " +
                        r.bootstrap);
  for (const step_t& s : steps)
    if (!s.ok)
      problems->push_back("self-test step '" + s.name +
                          "' failed: " + s.detail);
}

}  // namespace

int main(int argc, char** argv)
{
  bool json = false, check = false, verbose = false;
  const option longopts[] = {{"json", no_argument, nullptr, 'j'},
                             {"check", no_argument, nullptr, 'c'},
                             {"verbose", no_argument, nullptr, 'v'},
                             {"version", no_argument, nullptr, 'V'},
                             {"help", no_argument, nullptr, 'h'},
                             {nullptr, 0, nullptr, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "jcvVh", longopts, nullptr)) != -1) {
    switch (c) {
      case 'j':
        json = true;
        break;
      case 'c':
        check = true;
        break;
      case 'v':
        verbose = true;
        break;
      case 'V':
        std::printf("lci_info (LCI) %s\n", kVersion);
        return 0;
      case 'h':
        std::fputs(kUsage, stdout);
        return 0;
      default:
        std::fputs(kUsage, stderr);
        return 2;
    }
  }
  if (optind < argc) {
    std::fprintf(stderr, "lci_info: unexpected argument '%s'\n%s", argv[optind],
                 kUsage);
    return 2;
  }

  report_t r;
  r.bootstrap = lci::bootstrap::describe_detection();
  r.shm = check_dev_shm();
  r.cma = check_cma();
  r.providers = probe_providers();

  if (!check) {
    if (json)
      print_json(r, nullptr, nullptr);
    else
      print_text(r, verbose);
    return 0;
  }

  const std::vector<step_t> steps = self_test();
  std::vector<std::string> problems, warnings;
  diagnose(r, steps, &problems, &warnings);
  if (json) {
    print_json(r, &steps, &problems);
  } else {
    std::printf("LCI %s (commit %s): self-test on one rank\n", kVersion,
                kCommit);
    for (const step_t& s : steps)
      std::printf("  %-45s %s%s\n", s.name.c_str(),
                  s.ok ? "ok" : "FAILED: ", s.detail.c_str());
    std::printf("  %-45s %s\n", "/dev/shm (native shared memory)",
                r.shm.ok ? "ok" : ("FAILED: " + r.shm.detail).c_str());
    int usable = 0;
    for (const provider_t& p : r.providers) usable += p.usable;
    if (lci::net::find_backend("ofi"))
      std::printf("  %-45s %d usable\n", "libfabric providers", usable);
    else
      std::printf("  %-45s not built in\n", "libfabric providers");
    std::printf("  %-45s %s\n", "single-copy RMA (CMA)",
                r.cma.allowed ? "allowed" : "not allowed (warning)");
    for (const std::string& w : warnings)
      std::printf("warning: %s\n", w.c_str());
    for (const std::string& p : problems)
      std::printf("problem: %s\n", p.c_str());
    std::printf("%s\n", problems.empty() ? "lci_info: all checks passed"
                                         : "lci_info: some checks failed");
  }
  return problems.empty() ? 0 : 1;
}
