// PMI wire format helpers shared by the PMI-1 and PMI-2 clients (pmi1.cpp,
// pmi2.cpp) and the lcrun launcher's PMI server. Header-only, no
// dependencies.
//
// A PMI-1 message is one line of space-separated "key=value" tuples ending
// in "\n", e.g. "cmd=put kvsname=kvs_0 key=k value=v". Parsing is lenient as
// the protocol write-ups recommend: tuples may come in any order, extra
// spaces and extra keys are fine, and a word without '=' continues the
// previous value (values may contain spaces).
//
// A PMI-2 message is a 6-character decimal length followed by that many
// bytes of "cmd=NAME;key=value;...;". The servers pad the length with spaces
// on either side: hydra right-aligns it ("    26cmd=kvs-put-response;rc=0;")
// and Slurm's pmi2 plugin left-aligns it ("26    cmd=..."); both read a
// request's length with atoi, so what we send (right-aligned) suits both.
// Values cannot contain ';'.
#ifndef LCI_BOOTSTRAP_PMI_WIRE_HPP
#define LCI_BOOTSTRAP_PMI_WIRE_HPP

#include <cstddef>
#include <map>
#include <string>

namespace lci::bootstrap::pmi_wire
{

using message_t = std::map<std::string, std::string>;

// Splits one line (without its "\n") into its tuples.
inline message_t parse(const std::string& line)
{
  message_t out;
  std::string* last_value = nullptr;
  std::size_t pos = 0;
  while (pos < line.size()) {
    std::size_t start = line.find_first_not_of(" \t\r", pos);
    if (start == std::string::npos) break;
    std::size_t end = line.find_first_of(" \t\r", start);
    if (end == std::string::npos) end = line.size();
    std::string word = line.substr(start, end - start);
    std::size_t eq = word.find('=');
    if (eq == std::string::npos || eq == 0) {
      if (last_value) *last_value += " " + word;
    } else {
      last_value = &out[word.substr(0, eq)];
      *last_value = word.substr(eq + 1);
    }
    pos = end;
  }
  return out;
}

// Returns the value of `key`, or `fallback` when it is absent.
inline std::string get(const message_t& msg, const std::string& key,
                       const std::string& fallback = "")
{
  auto it = msg.find(key);
  return it == msg.end() ? fallback : it->second;
}

// Parses a decimal int made of an optional sign and digits only.
inline bool parse_int(const std::string& text, long long* value)
{
  std::size_t i = (!text.empty() && (text[0] == '-' || text[0] == '+')) ? 1 : 0;
  if (i == text.size() || text.size() - i > 18) return false;
  long long v = 0;
  for (std::size_t j = i; j < text.size(); ++j) {
    if (text[j] < '0' || text[j] > '9') return false;
    v = v * 10 + (text[j] - '0');
  }
  *value = (text[0] == '-') ? -v : v;
  return true;
}

// Width of the PMI-2 length prefix, and the largest length it can hold.
constexpr std::size_t kV2LengthWidth = 6;
constexpr std::size_t kV2MaxLength = 999999;

// Frames a PMI-2 message body ("cmd=...;...;") with its length prefix.
// The caller keeps bodies below kV2MaxLength.
inline std::string frame_v2(const std::string& body)
{
  std::string length = std::to_string(body.size());
  if (length.size() < kV2LengthWidth)
    length.insert(0, kV2LengthWidth - length.size(), ' ');
  return length + body;
}

// Parses a PMI-2 length prefix: optional spaces, at least one digit, then
// optional spaces (right- or left-aligned, see above).
inline bool parse_v2_length(const std::string& prefix, std::size_t* length)
{
  if (prefix.size() != kV2LengthWidth) return false;
  std::size_t i = 0;
  while (i < prefix.size() && prefix[i] == ' ') ++i;
  std::size_t value = 0;
  std::size_t digits = 0;
  for (; i < prefix.size() && prefix[i] >= '0' && prefix[i] <= '9'; ++i) {
    value = value * 10 + static_cast<std::size_t>(prefix[i] - '0');
    ++digits;
  }
  while (i < prefix.size() && prefix[i] == ' ') ++i;
  if (digits == 0 || i != prefix.size()) return false;
  *length = value;
  return true;
}

// The name of a PMI-2 error code (the rc of a reply), as the PMI-2 API
// (pmi2.h of MPICH and Slurm) numbers them, or "" for an unknown code.
inline const char* v2_error_name(long long rc)
{
  switch (rc) {
    case -1:
      return "PMI2_FAIL";
    case 1:
      return "PMI2_ERR_INIT";
    case 2:
      return "PMI2_ERR_NOMEM";
    case 3:
      return "PMI2_ERR_INVALID_ARG";
    case 4:
      return "PMI2_ERR_INVALID_KEY";
    case 5:
      return "PMI2_ERR_INVALID_KEY_LENGTH";
    case 6:
      return "PMI2_ERR_INVALID_VAL";
    case 7:
      return "PMI2_ERR_INVALID_VAL_LENGTH";
    case 8:
      return "PMI2_ERR_INVALID_LENGTH";
    case 9:
      return "PMI2_ERR_INVALID_NUM_ARGS";
    case 10:
      return "PMI2_ERR_INVALID_ARGS";
    case 11:
      return "PMI2_ERR_INVALID_NUM_PARSED";
    case 12:
      return "PMI2_ERR_INVALID_KEYVALP";
    case 13:
      return "PMI2_ERR_INVALID_SIZE";
    case 14:
      return "PMI2_ERR_OTHER";
    default:
      return "";
  }
}

// Splits a PMI-2 body (without its length prefix) into its fields: "k=v"
// separated by ';'. A field without '=' is kept with an empty value.
inline message_t parse_v2(const std::string& body)
{
  message_t out;
  std::size_t pos = 0;
  while (pos < body.size()) {
    std::size_t end = body.find(';', pos);
    if (end == std::string::npos) end = body.size();
    std::string field = body.substr(pos, end - pos);
    if (!field.empty()) {
      std::size_t eq = field.find('=');
      if (eq == std::string::npos) {
        out[field] = "";
      } else if (eq > 0) {
        out[field.substr(0, eq)] = field.substr(eq + 1);
      }
    }
    pos = end + 1;
  }
  return out;
}

// The value of a "secret=" tuple replaced by "***", for logs and error
// messages (lcrun --pmi-port's job secret must not be printed).
inline std::string redact_secret(const std::string& line)
{
  std::string out = line;
  std::size_t pos = 0;
  while ((pos = out.find("secret=", pos)) != std::string::npos) {
    bool starts_word = pos == 0 || out[pos - 1] == ' ' || out[pos - 1] == ';';
    pos += 7;
    if (!starts_word) continue;
    std::size_t end = out.find_first_of(" \t\r;", pos);
    if (end == std::string::npos) end = out.size();
    out.replace(pos, end - pos, "***");
    pos += 3;
  }
  return out;
}

}  // namespace lci::bootstrap::pmi_wire

#endif  // LCI_BOOTSTRAP_PMI_WIRE_HPP
