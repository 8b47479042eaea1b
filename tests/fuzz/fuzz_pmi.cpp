// Fuzz target: the PMI wire protocol, both ends.
//   - src/bootstrap/pmi_wire.hpp: PMI-1 lines (parse, parse_int) and PMI-2
//     messages (parse_v2_length, parse_v2);
//   - the client side, src/bootstrap/pmi_conn.cpp: the input is what the
//     process manager sends back (read_line / read_v2 / call_v1 / call_v2
//     over a socketpair passed as PMI_FD), until the stream ends;
//   - the server side, tools/lcrun/pmi_server.cpp: the input is what a rank
//     sends to lcrun (over a socketpair, bound to rank 0 or unbound as in
//     PMI_PORT mode).
// Malformed input must give an error reply or a std::runtime_error, never a
// crash or a sanitizer report. Built with libFuzzer (LCI_FUZZ=ON) or with
// corpus_driver.cpp (always).
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "bootstrap/pmi_conn.hpp"
#include "bootstrap/pmi_wire.hpp"
#include "pmi_server.hpp"

namespace wire = lci::bootstrap::pmi_wire;

namespace
{

[[noreturn]] void fail(const char* what)
{
  std::fprintf(stderr, "fuzz_pmi: %s\n", what);
  std::abort();
}

void drive_parsers(const std::string& text)
{
  wire::message_t m = wire::parse(text);
  for (const auto& kv : m) {
    long long v = 0;
    wire::parse_int(kv.second, &v);
    if (kv.first.empty()) fail("parse produced an empty key");
  }
  if (text.size() >= wire::kV2LengthWidth) {
    std::size_t n = 0;
    if (wire::parse_v2_length(text.substr(0, wire::kV2LengthWidth), &n)) {
      if (n > wire::kV2MaxLength) fail("a 6-digit length above the maximum");
      std::string body = text.substr(wire::kV2LengthWidth, n);
      wire::message_t v2 = wire::parse_v2(body);
      for (const auto& kv : v2)
        if (kv.first.empty()) fail("parse_v2 produced an empty key");
      // what frame_v2 writes, parse_v2_length reads back
      std::size_t back = 0;
      if (!wire::parse_v2_length(
              wire::frame_v2(body).substr(0, wire::kV2LengthWidth), &back) ||
          back != body.size())
        fail("frame_v2 and parse_v2_length disagree");
    }
  }
}

// The client reads `text` as the process manager's replies.
void drive_client(const std::string& text, bool v2)
{
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) fail("socketpair");
  // the server's end: its replies are the input; then end of stream
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(sv[1], text.data() + done, text.size() - done);
    if (n <= 0) break;  // larger than the socket buffer: the rest is cut
    done += static_cast<std::size_t>(n);
  }
  shutdown(sv[1], SHUT_WR);
  // requests the client writes must not block: the buffer is ample for
  // the few it sends before the stream ends
  std::string fd = std::to_string(sv[0]);
  setenv("PMI_FD", fd.c_str(), 1);
  unsetenv("PMI_PORT");
  try {
    lci::bootstrap::pmi_conn_t conn("fuzz");
    conn.set_timeout(5);
    for (int i = 0; i < 64; ++i) {
      if (v2) {
        if (i % 2)
          conn.call_v2("cmd=kvs-get;key=k;", "kvs-get-response");
        else
          conn.read_v2("cmd=fullinit;");
      } else {
        if (i % 2)
          conn.call_v1("cmd=get kvsname=k key=k", "get_result");
        else
          conn.read_line("cmd=barrier_in");
      }
    }
  } catch (const std::runtime_error&) {
    // the expected end: a bad reply or the end of the stream
  }
  unsetenv("PMI_FD");
  close(sv[0]);
  close(sv[1]);
}

// lcrun's server reads `text` as a rank's requests. `secret`: the server
// has lcrun --pmi-port's job secret, "5ec2e7" (short, so the fuzzer finds
// it), which an unbound connection must present in its initack.
void drive_server(const std::string& text, bool bound, bool secret)
{
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) fail("socketpair");
  // the server's replies must never block it: they are read (and dropped)
  // below, and its end is non-blocking
  fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
  fcntl(sv[1], F_SETFL, fcntl(sv[1], F_GETFL) | O_NONBLOCK);
  {
    lcrun::pmi_server_t server(2, "kvs_fuzz", false,
                               secret ? "5ec2e7" : "");
    server.add_connection(sv[0], bound ? 0 : -1);
    std::size_t done = 0;
    char sink[65536];
    int idle = 0;
    while (done < text.size() && idle < 4) {
      ssize_t n = write(sv[1], text.data() + done, text.size() - done);
      if (n > 0) {
        done += static_cast<std::size_t>(n);
        idle = 0;
      } else {
        ++idle;
      }
      server.on_readable(sv[0]);
      while (read(sv[1], sink, sizeof(sink)) > 0) {
      }
    }
    // the rank goes away: the server drops the connection (and closes
    // sv[0]) when it reads the end of the stream
    close(sv[1]);
    server.on_readable(sv[0]);
    (void)server.abort_request();
    (void)server.barrier_waits_for(1);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
  if (size == 0) return 0;
  // the first byte chooses the client's wire format and the server's mode
  const uint8_t mode = data[0];
  std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  drive_parsers(text);
  drive_client(text, mode & 1);
  drive_server(text, mode & 2, mode & 4);
  return 0;
}
