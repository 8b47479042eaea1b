// PMI-1 wire format helpers shared by the PMI-1 client (pmi1.cpp) and the
// lcrun launcher's PMI-1 server. Header-only, no dependencies.
//
// A PMI-1 message is one line of space-separated "key=value" tuples ending
// in "\n", e.g. "cmd=put kvsname=kvs_0 key=k value=v". Parsing is lenient as
// the protocol write-ups recommend: tuples may come in any order, extra
// spaces and extra keys are fine, and a word without '=' continues the
// previous value (values may contain spaces).
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

}  // namespace lci::bootstrap::pmi_wire

#endif  // LCI_BOOTSTRAP_PMI_WIRE_HPP
