// Serialisation of the file header body: metadata key/values and the event schema.
#include "format/schema.h"

#include <cstring>

#include "format/crc32c.h"
#include "format/file_layout.h"
#include "format/varint.h"

namespace sigmatrace::format {

int TypeDesc::field_index(const std::string& field) const {
  for (size_t i = 0; i < fields.size(); ++i)
    if (fields[i].name == field) return static_cast<int>(i);
  return -1;
}

Schema Schema::builtin() {
  Schema s;
  int n = 0;
  const EventSpec* specs = builtin_event_specs(&n);
  for (int i = 0; i < n; ++i) {
    TypeDesc t;
    t.id = specs[i].id;
    t.name = specs[i].name;
    for (int f = 0; f < specs[i].field_count; ++f) t.fields.push_back({specs[i].fields[f].kind, specs[i].fields[f].name});
    s.types.push_back(std::move(t));
  }
  return s;
}

const TypeDesc* Schema::lookup(uint16_t id) const {
  for (const TypeDesc& t : types)
    if (t.id == id) return &t;
  return nullptr;
}

const TypeDesc* Schema::lookup(const std::string& name) const {
  for (const TypeDesc& t : types)
    if (t.name == name) return &t;
  return nullptr;
}

namespace {
void put_varint(std::vector<uint8_t>& out, uint64_t v) {
  uint8_t tmp[kVarintMaxBytes];
  out.insert(out.end(), tmp, varint_put(tmp, v));
}
void put_string(std::vector<uint8_t>& out, const std::string& s) {
  put_varint(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

struct Cursor {
  const uint8_t* p;
  const uint8_t* end;
  bool ok = true;
  uint64_t varint() {
    uint64_t v = 0;
    if (!ok || !(p = varint_get(p, end, &v))) ok = false, p = end;
    return v;
  }
  std::string string() {
    uint64_t n = varint();
    if (!ok || n > static_cast<uint64_t>(end - p)) {
      ok = false;
      return {};
    }
    std::string s(reinterpret_cast<const char*>(p), n);
    p += n;
    return s;
  }
};
}  // namespace

std::vector<uint8_t> encode_header_body(const Metadata& meta, const Schema& schema) {
  std::vector<uint8_t> out;
  put_varint(out, meta.size());
  for (const auto& [k, v] : meta) {
    put_string(out, k);
    put_string(out, v);
  }
  put_varint(out, schema.types.size());
  for (const TypeDesc& t : schema.types) {
    put_varint(out, t.id);
    put_string(out, t.name);
    put_varint(out, t.fields.size());
    for (const FieldDesc& f : t.fields) {
      out.push_back(static_cast<uint8_t>(f.kind));
      put_string(out, f.name);
    }
  }
  return out;
}

bool decode_header_body(const uint8_t* p, size_t n, Metadata* meta, Schema* schema, std::string* error) {
  Cursor c{p, p + n};
  uint64_t nmeta = c.varint();
  for (uint64_t i = 0; c.ok && i < nmeta; ++i) {
    std::string k = c.string();
    std::string v = c.string();
    meta->emplace_back(std::move(k), std::move(v));
  }
  uint64_t ntypes = c.varint();
  for (uint64_t i = 0; c.ok && i < ntypes; ++i) {
    TypeDesc t;
    uint64_t id = c.varint();
    t.name = c.string();
    uint64_t nfields = c.varint();
    if (id > 0xffff || nfields > 64) c.ok = false;
    t.id = static_cast<uint16_t>(id);
    for (uint64_t f = 0; c.ok && f < nfields; ++f) {
      if (c.p >= c.end) {
        c.ok = false;
        break;
      }
      uint8_t kind = *c.p++;
      if (kind < 1 || kind > 3) c.ok = false;
      t.fields.push_back({static_cast<FieldKind>(kind), c.string()});
    }
    schema->types.push_back(std::move(t));
  }
  if (!c.ok) *error = "malformed file header (metadata or event schema)";
  return c.ok;
}

std::vector<uint8_t> encode_file_prefix(const Metadata& meta, const Schema& schema) {
  std::vector<uint8_t> body = encode_header_body(meta, schema);
  FileHeader h{};
  std::memcpy(h.magic, kFileMagic, sizeof h.magic);
  h.version_major = kFormatMajor;
  h.version_minor = kFormatMinor;
  h.body_bytes = static_cast<uint32_t>(body.size());
  h.body_crc = crc32c(body.data(), body.size());
  h.header_crc = crc32c(&h, offsetof(FileHeader, header_crc));
  std::vector<uint8_t> out(sizeof h + body.size());
  std::memcpy(out.data(), &h, sizeof h);
  if (!body.empty()) std::memcpy(out.data() + sizeof h, body.data(), body.size());
  return out;
}

const std::string* find_meta(const Metadata& meta, const std::string& key) {
  for (const auto& kv : meta)
    if (kv.first == key) return &kv.second;
  return nullptr;
}

}  // namespace sigmatrace::format
