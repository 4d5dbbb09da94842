// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/traffic/traffic_records.h - what `lumen traffic client` records:
// one row per flow (flows.csv), TCP_INFO samples (samples.csv) and the
// summary (--json). The CSV headers are part of the contract with the
// experiment runner: change them only together.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace lumen
{

extern const char kFlowsCsvHeader[];
extern const char kSamplesCsvHeader[];

struct ClientFlowRecord {
	std::uint64_t flow_id = 0;
	std::string dst;
	std::string cc;
	std::string kind; // long | poisson | incast
	std::uint64_t size_bytes = 0; // long flows: payload bytes sent
	std::uint64_t start_ns = 0; // connect() submitted
	std::uint64_t end_ns = 0; // completion received (or failure)
	std::uint64_t bytes = 0; // payload bytes the server confirmed
	std::uint64_t retrans = 0; // tcpi_total_retrans at the end
	std::string status; // ok | error:<why>
};

struct TcpSample {
	std::uint64_t flow_id = 0;
	std::uint64_t t_ns = 0;
	std::uint64_t bytes_acked = 0;
	std::uint64_t cwnd = 0; // segments
	std::uint64_t srtt_us = 0;
	std::uint64_t retrans = 0;
	std::uint64_t pacing_rate_bps = 0; // 0 = not paced
	std::uint64_t delivery_rate_bps = 0;
};

// Status text safe in a CSV field: "error:" + why with ',', '"' and line
// breaks replaced.
std::string error_status(const std::string &why);

std::string flow_csv_row(const std::string &label, const ClientFlowRecord &r, std::uint64_t link_rate_bps,
			 std::uint64_t base_rtt_ns);
std::string sample_csv_row(const std::string &label, const TcpSample &s);

// A CSV file written as the run goes (buffered); the header is written at
// open. Error when it cannot be created or written, or is a symbolic link.
class CsvWriter
{
      public:
	// exclusive: the file must not exist yet (O_EXCL); never through a symlink
	CsvWriter(const std::string &path, const char *header, bool exclusive = false);
	~CsvWriter();
	CsvWriter(const CsvWriter &) = delete;
	CsvWriter &operator=(const CsvWriter &) = delete;
	void row(const std::string &line); // without the newline
	void close(); // flushes; Error on a write failure

      private:
	std::string path_;
	std::FILE *file_ = nullptr;
};

struct TrafficSummary {
	std::uint64_t flows = 0;
	std::uint64_t completed = 0;
	std::uint64_t errors = 0;
	std::uint64_t bytes = 0;
	double goodput_mbps = 0; // bytes over [first start, last end]
	double fct_p50_us = 0, fct_p99_us = 0; // completed flows
	double slowdown_p50 = 0, slowdown_p99 = 0;
	double cpu_user_s = 0, cpu_sys_s = 0;
};

TrafficSummary summarize(const std::vector<ClientFlowRecord> &records, std::uint64_t link_rate_bps,
			 std::uint64_t base_rtt_ns);
std::string summary_json(const TrafficSummary &s);
std::string summary_text(const TrafficSummary &s);

} // namespace lumen
