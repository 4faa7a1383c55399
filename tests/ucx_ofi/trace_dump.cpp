// trace_dump DIR [TYPE_PREFIX]: prints every event of an experiment as one text line
// ("file type field=value ..."), for debugging the ucx/ofi tests by eye.
#include <cstdio>
#include <string>

#include "format/experiment_layout.h"
#include "format/trace_reader.h"

int main(int argc, char** argv) {
  using namespace sigmatrace::format;
  if (argc < 2) return 2;
  std::string prefix = argc > 2 ? argv[2] : "";
  for (const std::string& path : list_trace_files(argv[1])) {
    TraceFileReader r;
    std::string err;
    if (!r.open(path, &err)) {
      fprintf(stderr, "%s\n", err.c_str());
      return 1;
    }
    Chunk c;
    DecodedEvent ev;
    std::string base = path.substr(path.rfind('/') + 1);
    while (r.next_chunk(&c)) {
      ChunkEventDecoder d(c.header, c.payload.data(), c.payload.size(), &r.schema());
      while (d.next(&ev)) {
        if (!ev.desc || ev.desc->name.compare(0, prefix.size(), prefix) != 0) continue;
        printf("%s %s", base.c_str(), ev.desc->name.c_str());
        for (int i = 0; i < ev.field_count; ++i) {
          const FieldDesc& f = ev.desc->fields[i];
          if (f.kind == FieldKind::bytes) {
            printf(" %s=", f.name.c_str());
            for (unsigned char ch : ev.bytes[i]) printf(ch >= 32 && ch < 127 ? "%c" : "\\x%02x", ch);
          } else if (f.kind == FieldKind::i64) {
            printf(" %s=%lld", f.name.c_str(), static_cast<long long>(ev.as_i64(i)));
          } else {
            printf(" %s=0x%llx", f.name.c_str(), static_cast<unsigned long long>(ev.values[i]));
          }
        }
        printf("\n");
      }
    }
  }
  return 0;
}
