// See series.h.
#include "analysis/series.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "analysis/aggregates.h"
#include "analysis/ibv_names.h"

namespace sigmatrace::analysis {

unsigned latency_bucket(int64_t dur_ns) {
  if (dur_ns <= 1) return 0;
  // 4 * log2(d), from the exponent and the top two bits of the mantissa: exact at bucket edges
  // that are powers of two, and within one bucket of the float formula elsewhere.
  const int e = 63 - __builtin_clzll(static_cast<uint64_t>(dur_ns));
  const unsigned quarter = e >= 2 ? static_cast<unsigned>((static_cast<uint64_t>(dur_ns) >> (e - 2)) & 3) : static_cast<unsigned>((dur_ns << (2 - e)) & 3);
  return std::min<unsigned>(kLatencyBuckets - 1, static_cast<unsigned>(e) * 4 + quarter);
}

double latency_bucket_lower_ns(unsigned bucket) {
  // The lower edge of a bucket, as latency_bucket cuts: 2^e * (1 + q/4).
  return std::ldexp(1.0 + (bucket % 4) / 4.0, static_cast<int>(bucket / 4));
}

SeriesGeometry::SeriesGeometry(const ExperimentModel& m) : start_ns(m.start_ns) {
  const int64_t span = std::max<int64_t>(1, m.end_ns - m.start_ns + 1);
  bin_ns = std::max<int64_t>(1, (span + kSeriesFineBins - 1) / kSeriesFineBins);
}

unsigned SeriesGeometry::bin(int64_t ts_ns) const {
  if (ts_ns <= start_ns) return 0;
  return static_cast<unsigned>(std::min<int64_t>(kSeriesFineBins - 1, (ts_ns - start_ns) / bin_ns));
}

namespace {

// The operation classes whose bytes the matrices count for their initiator (receives are the
// peer's, counted at its sender).
bool counted_in_traffic(unsigned op_class) { return op_moves_bytes_out(op_class) || op_class == kOpRead; }

class SeriesFileSink : public FileSink {
 public:
  SeriesFileSink(const SeriesGeometry& g, size_t qps, ProcessSeries* s) : g_(g), s_(s), qp_slot_(qps, -1) { latency_slot_.fill(-1); }

  void op(const OpRecord& r) override { count(r, -2); }
  // GPU-initiated operations have no completion of their own: no duration.
  void gpu_op(const OpRecord& r, const GpuWqeRecord& w) override {
    count(r, w.gpu);
    KernelActivity& k = kernel(w.kernel ? *w.kernel : std::string(), w.gpu);
    phases_.add(&k.phases, r.ts_ns, r.op_id, w.launch_tsc, op_moves_data(r.op_class, r.bytes), r.wr_count, r.bytes);
    if (!counted_in_traffic(r.op_class)) return;
    PeerTraffic& t = k.to_peer[r.peer_process_id];
    t.ops += r.wr_count;
    t.bytes += r.bytes;
  }

  // Only the process's busiest QPs keep their bins: the experiment's busiest are among them, and
  // memory stays bounded by one file's QPs per worker.
  void finish() override {
    phases_.finish();
    std::vector<QpSeries>& q = s_->qps;
    auto busier = [](const QpSeries& a, const QpSeries& b) {
      return a.traffic.bytes.total != b.traffic.bytes.total ? a.traffic.bytes.total > b.traffic.bytes.total : a.qp_id < b.qp_id;
    };
    if (q.size() > kSeriesTopQps) {
      std::partial_sort(q.begin(), q.begin() + kSeriesTopQps, q.end(), busier);
      s_->qps_without_series += q.size() - kSeriesTopQps;
      q.resize(kSeriesTopQps);
      q.shrink_to_fit();
    }
  }

  void doorbell(const DoorbellRecord& r) override {
    gpu(r.gpu).doorbells.add(g_.bin(r.ts_ns), 1);
    KernelActivity& k = kernel(r.kernel ? *r.kernel : std::string(), r.gpu);
    k.doorbells += 1;
    k.wqebbs += r.delta;
    k.wqes += r.wqes;
    k.data_doorbells += r.wqe_class == 1;
    k.control_doorbells += r.wqe_class == 2;
    if (!k.first_ns || r.ts_ns < k.first_ns) k.first_ns = r.ts_ns;
    k.last_ns = std::max(k.last_ns, r.ts_ns);
  }

 private:
  // gpu_of: the GPU of a GPU-initiated operation; -2 for the others.
  void count(const OpRecord& r, int64_t gpu_of) {
    if (r.dur_ns >= 0 && !r.is_call && gpu_of == -2) duration(r);  // a post call's duration is not its operation's
    if (!counted_in_traffic(r.op_class)) return;
    if (r.ts_ns <= 0) {
      ++s_->untimed_ops;
      return;
    }
    const unsigned b = g_.bin(r.ts_ns);
    s_->by_layer[layer_index(r.layer)].add(b, r.bytes, r.wr_count);
    if (QpSeries* q = r.qp_id >= 0 ? qp(r.qp_id) : nullptr) q->traffic.add(b, r.bytes, r.wr_count);
    if (gpu_of != -2) gpu(gpu_of).traffic.add(b, r.bytes, r.wr_count);
  }

  void duration(const OpRecord& r) {
    const unsigned layer = layer_index(r.layer);
    int& slot = latency_slot_[layer * kOpClasses + std::min<unsigned>(r.op_class, kOpClasses - 1)];
    if (slot < 0) {
      slot = static_cast<int>(s_->latency.size());
      s_->latency.push_back(LatencyHistogram{layer, r.op_class, std::vector<uint64_t>(kLatencyBuckets, 0), 0, 0, r.dur_ns, r.dur_ns});
    }
    LatencyHistogram* h = &s_->latency[static_cast<size_t>(slot)];
    h->counts[latency_bucket(r.dur_ns)] += 1;
    h->ops += 1;
    h->sum_ns += static_cast<uint64_t>(r.dur_ns);
    h->sum_sq_ns2 += static_cast<double>(r.dur_ns) * static_cast<double>(r.dur_ns);
    const double l = log_duration(r.dur_ns);
    h->sum_log_ns += l, h->sum_log_sq += l * l;
    // A receive's duration is how long it waited for its sender, not what an operation cost.
    if (r.qp_id >= 0 && r.op_class != kOpRecv) s_->qp_durations[r.qp_id].add(r.dur_ns);
    h->min_ns = std::min(h->min_ns, r.dur_ns);
    h->max_ns = std::max(h->max_ns, r.dur_ns);
  }

  // A QP the model does not know gets no series of its own (its bytes are in its layer's).
  QpSeries* qp(int64_t id) {
    if (static_cast<uint64_t>(id) >= qp_slot_.size()) return nullptr;
    int32_t& slot = qp_slot_[static_cast<size_t>(id)];
    if (slot < 0) {
      slot = static_cast<int32_t>(s_->qps.size());
      s_->qps.push_back(QpSeries{id, {}});
    }
    return &s_->qps[static_cast<size_t>(slot)];
  }
  GpuSeries& gpu(int64_t id) {
    auto [it, fresh] = gpu_index_.try_emplace(id, s_->gpus.size());
    if (fresh) s_->gpus.push_back(GpuSeries{id, {}, {}});
    return s_->gpus[it->second];
  }
  KernelActivity& kernel(const std::string& name, int64_t gpu) {
    auto [it, fresh] = kernel_index_.try_emplace({name, gpu}, s_->kernels.size());
    if (fresh) {
      s_->kernels.emplace_back();
      s_->kernels.back().kernel = name;
      s_->kernels.back().gpu = gpu;
    }
    return s_->kernels[it->second];
  }

  const SeriesGeometry& g_;
  ProcessSeries* s_;
  std::vector<int32_t> qp_slot_;  // by qp_id: index in s_->qps, -1 none yet
  std::array<int, kLayerCount * kOpClasses> latency_slot_;  // by (layer, class): index in s_->latency
  std::map<int64_t, size_t> gpu_index_;
  std::map<std::pair<std::string, int64_t>, size_t> kernel_index_;
  KernelPhaseBuilder phases_;
};

}  // namespace

std::unique_ptr<FileSink> SeriesExport::open_file(uint32_t process_id) {
  return std::make_unique<SeriesFileSink>(geometry_, model_.qps.size(), &agg_->process[process_id].series);
}

}  // namespace sigmatrace::analysis
