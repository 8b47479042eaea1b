// kTsan: true when the stress test is built with ThreadSanitizer, which
// runs it 5-10x slower (tests scale their iteration counts down by it).
#ifndef LCI_TESTS_STRESS_TSAN_HPP
#define LCI_TESTS_STRESS_TSAN_HPP

#if defined(__SANITIZE_THREAD__)
constexpr bool kTsan = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr bool kTsan = true;
#else
constexpr bool kTsan = false;
#endif
#else
constexpr bool kTsan = false;
#endif

#endif  // LCI_TESTS_STRESS_TSAN_HPP
