// GGUF files as bytes: what read_gguf takes (every value type, both
// versions, the alignment), and hostile files refused by name. The bytes
// are written here, field by field from the GGUF definition, so each case
// breaks exactly one thing. Files from the independent converter
// (tools/hf_to_gguf.py) are the model tests' (test_hf.cpp).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/ggml_blocks.h"
#include "core/gguf.h"
#include "models/stored_tensors.h"
#include "temp_dir.h"

using namespace mstar;

namespace {

// A GGUF file, little-endian, built field by field.
struct Bytes {
  std::string b;
  template <class T>
  Bytes& put(T v) {
    b.append(reinterpret_cast<const char*>(&v), sizeof v);
    return *this;
  }
  Bytes& str(const std::string& s) {
    put<uint64_t>(s.size());
    b += s;
    return *this;
  }
  Bytes& header(uint64_t tensors, uint64_t kvs, uint32_t version = 3) {
    b += "GGUF";
    return put<uint32_t>(version).put<uint64_t>(tensors).put<uint64_t>(kvs);
  }
  Bytes& kv_u32(const std::string& k, uint32_t v) { return str(k).put<uint32_t>(4).put<uint32_t>(v); }
  Bytes& kv_str(const std::string& k, const std::string& v) { return str(k).put<uint32_t>(8).str(v); }
  Bytes& tensor(const std::string& name, std::vector<uint64_t> dims, uint32_t type, uint64_t offset) {
    str(name).put<uint32_t>(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) put<uint64_t>(d);
    return put<uint32_t>(type).put<uint64_t>(offset);
  }
  Bytes& align(std::size_t a = 32) {
    b.append((a - b.size() % a) % a, '\0');
    return *this;
  }
  Bytes& data(std::size_t n, char fill = 0) {
    b.append(n, fill);
    return *this;
  }
};

// Reads `bytes` as a file; the message of the InputError it throws, or "" when it reads.
std::string refusal(const std::string& bytes) {
  test::TempDir dir;
  dir.write("m.gguf", bytes);
  try {
    (void)read_gguf(dir / "m.gguf");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// Two tensors, an f32 [3, 2] and a q8_0 [64] one, after metadata of every kind.
Bytes good() {
  Bytes f;
  f.header(2, 6).kv_str("general.architecture", "llama").kv_u32("llama.block_count", 2);
  f.str("x.f32").put<uint32_t>(6).put<float>(1e-5f);
  f.str("x.bool").put<uint32_t>(7).put<uint8_t>(1);
  f.str("x.strings").put<uint32_t>(9).put<uint32_t>(8).put<uint64_t>(2).str("a").str("b c");
  f.str("x.ints").put<uint32_t>(9).put<uint32_t>(5).put<uint64_t>(3).put<int32_t>(-1).put<int32_t>(0).put<int32_t>(7);
  f.tensor("a", {3, 2}, 0, 0).tensor("q", {64}, 8, 32);
  f.align().data(24).align().data(2 * kQ8_0Bytes);
  return f;
}

}  // namespace

TEST_CASE("gguf: a file's metadata of every kind and its tensors read back, offsets from the aligned data start") {
  test::TempDir dir;
  dir.write("m.gguf", good().b);
  const GgufFile f = read_gguf(dir / "m.gguf");
  CHECK(f.version == 3);
  CHECK(f.alignment == 32);
  REQUIRE(f.find("general.architecture"));
  CHECK(f.find("general.architecture")->text == "llama");
  CHECK(f.find("llama.block_count")->integer == 2);
  CHECK(f.find("llama.block_count")->is_integer());
  CHECK(f.find("x.f32")->real == doctest::Approx(1e-5));
  CHECK(f.find("x.bool")->integer == 1);
  CHECK(f.find("x.strings")->texts == std::vector<std::string>{"a", "b c"});
  CHECK(f.find("x.ints")->integers == std::vector<int64_t>{-1, 0, 7});
  CHECK(f.find("x.ints")->describe() == "an array of 3 i32");
  REQUIRE(f.tensors.size() == 2);
  CHECK(f.tensors[0].dims == std::vector<int64_t>{3, 2});
  CHECK(f.tensors[0].dtype == DType::f32);
  CHECK(f.tensors[0].bytes == 24);
  CHECK(f.tensors[0].offset == f.data_offset);
  CHECK(f.data_offset % 32 == 0);
  CHECK(f.tensors[1].dtype == DType::q8_0);
  CHECK(f.tensors[1].bytes == 2 * kQ8_0Bytes);
  CHECK(f.tensors[1].offset == f.data_offset + 32);
  CHECK(is_gguf(dir / "m.gguf"));
  // Version 2 reads alike; a stated alignment moves the data start.
  Bytes v2;
  v2.header(1, 1, 2).kv_u32("general.alignment", 64).tensor("a", {4}, 0, 0).align(64).data(16);
  dir.write("v2.gguf", v2.b);
  const GgufFile g = read_gguf(dir / "v2.gguf");
  CHECK(g.version == 2);
  CHECK(g.alignment == 64);
  CHECK(g.data_offset % 64 == 0);
}

TEST_CASE("gguf: a file cut anywhere is refused with the byte it ran out at, never read past its end") {
  const std::string whole = good().b;
  // Every cut inside the header and tensor infos, and into the data.
  for (std::size_t n = 0; n < whole.size(); n += n < 300 ? 1 : 17) {
    CAPTURE(n);
    const std::string why = refusal(whole.substr(0, n));
    CAPTURE(why);
    CHECK(!why.empty());
    CHECK((why.find("past the end") != std::string::npos || why.find("not a GGUF file") != std::string::npos ||
           why.find("could hold") != std::string::npos));
  }
}

TEST_CASE("gguf: hostile headers are refused naming the problem, the key or tensor, and the value") {
  const auto refused = [](const Bytes& f, const std::string& says) {
    const std::string why = refusal(f.b);
    CAPTURE(why);
    CHECK(why.find(says) != std::string::npos);
  };
  refused(Bytes{"GGML...."}, "not a GGUF file");
  refused(Bytes().header(0, 0, 1), "GGUF version 1 (mstar reads versions 2 and 3)");
  refused(Bytes().header(0, 0, 0x03000000), "a big-endian GGUF file (version 3)");
  refused(Bytes().header(uint64_t{1} << 60, 0), "tensor count 1152921504606846976 is more than");
  refused(Bytes().header(0, uint64_t{1} << 60), "metadata count 1152921504606846976 is more than");
  refused(Bytes().header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(5).put<uint64_t>(uint64_t{1} << 62),
          "metadata 'k': an array of 4611686018427387904 i32 (at most 4194304)");
  refused(Bytes().header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(5).put<uint64_t>(1000).data(16),
          "metadata 'k': an array of 1000 i32, more than the 16 bytes left");
  refused(Bytes().header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(0).put<uint64_t>(uint64_t{1} << 23).data(64),
          "metadata 'k': an array of 8388608 u8 (at most 4194304)");
  refused(Bytes().header(0, 1).put<uint64_t>(uint64_t{1} << 40).data(16),
          "metadata key 0: a string of 1099511627776 bytes");
  refused(Bytes().header(0, 1).str("bad\xff").put<uint32_t>(4).put<uint32_t>(1), "metadata key 0: not UTF-8 (byte 3");
  refused(Bytes().header(0, 1).kv_str("k", "\xc0\x80"), "metadata 'k': not UTF-8 (byte 0");
  refused(Bytes().header(0, 2).kv_u32("k", 1).kv_u32("k", 2), "metadata 'k' appears twice");
  refused(Bytes().header(0, 1).str("k").put<uint32_t>(13).put<uint32_t>(1), "metadata 'k': unknown value type 13");
  refused(Bytes().header(0, 1).str("k").put<uint32_t>(7).put<uint8_t>(2), "metadata 'k': a bool holds 2");
  refused(Bytes().header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(9).put<uint64_t>(1),
          "metadata 'k': an array of arrays");
  refused(Bytes().header(0, 1).str("").put<uint32_t>(4).put<uint32_t>(1), "metadata key 0 is empty");
  refused(Bytes().header(0, 1).kv_u32("general.alignment", 24), "metadata 'general.alignment': u32 24");
  refused(Bytes().header(0, 1).str("general.alignment").put<uint32_t>(10).put<uint64_t>(32),
          "metadata 'general.alignment': u64 32 (a u32 power of two)");
  const auto one = [](std::vector<uint64_t> dims, uint32_t type, uint64_t offset, std::size_t data) {
    Bytes f;
    f.header(1, 0).tensor("t", std::move(dims), type, offset).align().data(data);
    return f;
  };
  refused(one({4, 1, 1, 1, 1}, 0, 0, 16), "tensor 't': 5 dimensions (1 to 4)");
  refused(one({4, 0}, 0, 0, 16), "tensor 't': dimension 1 is 0");
  refused(one({uint64_t{1} << 40, uint64_t{1} << 40}, 0, 0, 16), "tensor 't': dimension 1 is 1099511627776");
  refused(one({4}, 99, 0, 16), "tensor 't': ggml type 99, which mstar does not read (it reads f32 (0), f16 (1)");
  refused(one({17}, 8, 0, 64), "tensor 't': rows of 17 elements are not whole q8_0 blocks of 32");
  refused(one({4}, 0, 8, 64), "tensor 't': offset 8 is not a multiple of the alignment 32");
  refused(one({64}, 0, 0, 255), "tensor 't': 256 bytes at data offset 0 run past the end of the file (255 bytes");
  Bytes two;
  two.header(2, 0).tensor("a", {16}, 0, 0).tensor("b", {8}, 0, 32).align().data(64);
  refused(two, "tensors 'a' and 'b' overlap");
  Bytes twice;
  twice.header(2, 0).tensor("a", {8}, 0, 0).tensor("a", {8}, 0, 32).align().data(64);
  refused(twice, "tensor 'a' appears twice");
  Bytes unnamed;
  unnamed.header(1, 0).tensor("", {8}, 0, 0).align().data(32);
  refused(unnamed, "tensor info 0 has an empty name");
}

TEST_CASE("gguf: Q8_0 and Q4_0 blocks read as the format defines, and quantise as ggml's reference rounds") {
  // Q8_0: d = 0.5 as f16 (0x3800), q = -128 .. 127 in steps.
  unsigned char q8[kQ8_0Bytes] = {0x00, 0x38};
  for (int i = 0; i < 32; ++i) q8[2 + i] = static_cast<unsigned char>(static_cast<int8_t>(i * 8 - 128));
  float out[32];
  q8_0_to_f32(q8, out, 32);
  for (int i = 0; i < 32; ++i) CHECK(out[i] == 0.5f * static_cast<float>(i * 8 - 128));
  // Q4_0: element j in the low nibble of byte j, j + 16 in the high one, minus 8.
  unsigned char q4[kQ4_0Bytes] = {0x00, 0x3c};  // d = 1
  for (int i = 0; i < 16; ++i) q4[2 + i] = static_cast<unsigned char>(i | ((15 - i) << 4));
  q4_0_to_f32(q4, out, 32);
  for (int i = 0; i < 16; ++i) {
    CHECK(out[i] == static_cast<float>(i - 8));
    CHECK(out[i + 16] == static_cast<float>(7 - i));
  }
  // Quantising: Q8_0's largest magnitude is exactly 127 d; halves round away from zero.
  float x[32];
  for (int i = 0; i < 32; ++i) x[i] = static_cast<float>(i - 16) * 0.1f;
  x[31] = -127.0f * 0.03125f;  // the largest magnitude: d = 0.03125 exactly
  x[1] = 0.015625f;            // half a step: rounds away from zero, to 1
  x[2] = -0.015625f;           // and to -1
  unsigned char back[kQ8_0Bytes];
  q8_0_from_f32(x, back, 32);
  q8_0_to_f32(back, out, 32);
  CHECK(out[31] == x[31]);
  for (int i = 0; i < 31; ++i) CHECK(std::fabs(out[i] - x[i]) <= 0.03125f / 2);
  CHECK(static_cast<int8_t>(back[2 + 1]) == 1);
  CHECK(static_cast<int8_t>(back[2 + 2]) == -1);
  // Q4_0: d = max / -8 of the element of largest magnitude, which reads back exactly.
  for (int i = 0; i < 32; ++i) x[i] = static_cast<float>(i % 7) - 3.0f;
  x[5] = -8.0f;
  unsigned char back4[kQ4_0Bytes];
  q4_0_from_f32(x, back4, 32);
  q4_0_to_f32(back4, out, 32);
  CHECK(out[5] == -8.0f);
  for (int i = 0; i < 32; ++i) CHECK(std::fabs(out[i] - x[i]) <= 0.5f + 1e-6f);
}

TEST_CASE("gguf: a tensor of a block type where a model keeps a vector (a norm, a bias) is refused by name") {
  test::TempDir dir;
  Bytes f;
  f.header(1, 1).kv_str("general.architecture", "llama").tensor("blk.0.attn_norm.weight", {64}, 8, 0);
  f.align().data(2 * kQ8_0Bytes);
  dir.write("m.gguf", f.b);
  CHECK_NOTHROW((void)read_gguf(dir / "m.gguf"));  // the container is sound
  CHECK_THROWS_WITH_AS((void)index_weights({dir / "m.gguf"}),
                       doctest::Contains("tensor 'blk.0.attn_norm.weight' is a vector of q8_0 (a norm or bias is f32, "
                                         "f16 or bf16)"),
                       InputError);
}
