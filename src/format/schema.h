// A trace file's own description of its event types (as written by the profiler that made it),
// plus the process metadata (identity, configuration) carried in the file header.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "format/event_types.h"

namespace sigmatrace::format {

struct FieldDesc {
  FieldKind kind;
  std::string name;
};

struct TypeDesc {
  uint16_t id = 0;
  std::string name;
  std::vector<FieldDesc> fields;
  int field_index(const std::string& field) const;
};

struct Schema {
  std::vector<TypeDesc> types;  // indexed by lookup(), not by id
  static Schema builtin();
  const TypeDesc* lookup(uint16_t id) const;
  const TypeDesc* lookup(const std::string& name) const;
};

using Metadata = std::vector<std::pair<std::string, std::string>>;

// Header body: varint count, (key, value)*, varint types, (id, name, nfields, (kind, name)*)*.
std::vector<uint8_t> encode_header_body(const Metadata& meta, const Schema& schema);
// Returns false (with *error set) when the body is malformed.
bool decode_header_body(const uint8_t* p, size_t n, Metadata* meta, Schema* schema, std::string* error);

// The complete file prefix (FileHeader + body).
std::vector<uint8_t> encode_file_prefix(const Metadata& meta, const Schema& schema);

const std::string* find_meta(const Metadata& meta, const std::string& key);

}  // namespace sigmatrace::format
