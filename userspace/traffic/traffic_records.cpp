// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#include "traffic/traffic_records.h"

#include "base/error.h"
#include "base/json.h"
#include "traffic/workload.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace lumen
{

const char kFlowsCsvHeader[] =
	"label,flow_id,dst,cc,kind,size_bytes,start_ns,end_ns,fct_ns,bytes,retrans,ideal_fct_ns,slowdown,status";
const char kSamplesCsvHeader[] =
	"label,flow_id,t_ns,bytes_acked,cwnd,srtt_us,retrans,pacing_rate_bps,delivery_rate_bps";

std::string error_status(const std::string &why)
{
	std::string s = "error:" + why;
	for (char &c : s)
		if (c == ',' || c == '"' || c == '\n' || c == '\r')
			c = ';';
	return s;
}

std::string flow_csv_row(const std::string &label, const ClientFlowRecord &r, std::uint64_t link_rate_bps,
			 std::uint64_t base_rtt_ns)
{
	std::uint64_t fct = r.end_ns >= r.start_ns ? r.end_ns - r.start_ns : 0;
	std::uint64_t ideal = ideal_fct_ns(r.size_bytes, link_rate_bps, base_rtt_ns);
	char slow[32];
	std::snprintf(slow, sizeof(slow), "%.4f", slowdown(fct, ideal));
	std::string row;
	row.reserve(160);
	row += label + "," + std::to_string(r.flow_id) + "," + r.dst + "," + r.cc + "," + r.kind + ",";
	row += std::to_string(r.size_bytes) + "," + std::to_string(r.start_ns) + "," + std::to_string(r.end_ns) + ",";
	row += std::to_string(fct) + "," + std::to_string(r.bytes) + "," + std::to_string(r.retrans) + ",";
	row += std::to_string(ideal) + "," + slow + "," + r.status;
	return row;
}

std::string sample_csv_row(const std::string &label, const TcpSample &s)
{
	std::string row;
	row.reserve(128);
	row += label + "," + std::to_string(s.flow_id) + "," + std::to_string(s.t_ns) + ",";
	row += std::to_string(s.bytes_acked) + "," + std::to_string(s.cwnd) + "," + std::to_string(s.srtt_us) + ",";
	row += std::to_string(s.retrans) + "," + std::to_string(s.pacing_rate_bps) + "," +
	       std::to_string(s.delivery_rate_bps);
	return row;
}

CsvWriter::CsvWriter(const std::string &path, const char *header, bool exclusive) : path_(path)
{
	// not through a symlink: a generator runs as root, often in a shared
	// directory, and must not be made to overwrite what a link points to
	int flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (exclusive ? O_EXCL : O_TRUNC);
	int fd = ::open(path.c_str(), flags, 0644);
	if (fd < 0)
		throw Error("cannot create " + path + ": " +
			    (errno == ELOOP    ? std::string("it is a symbolic link")
			     : errno == EEXIST ? std::string("it exists already (--new-files)")
					       : std::strerror(errno)));
	file_ = ::fdopen(fd, "w");
	if (!file_) {
		int err = errno;
		::close(fd);
		throw Error("cannot create " + path + ": " + std::strerror(err));
	}
	std::setvbuf(file_, nullptr, _IOFBF, 1 << 20);
	row(header);
}

CsvWriter::~CsvWriter()
{
	if (file_)
		std::fclose(file_);
}

void CsvWriter::row(const std::string &line)
{
	if (!file_)
		throw Error("internal: " + path_ + " written after close");
	std::fwrite(line.data(), 1, line.size(), file_);
	std::fputc('\n', file_);
}

void CsvWriter::close()
{
	if (!file_)
		return;
	bool ok = std::ferror(file_) == 0;
	ok = (std::fclose(file_) == 0) && ok;
	file_ = nullptr;
	if (!ok)
		throw Error("cannot write " + path_ + ": " + std::strerror(errno));
}

TrafficSummary summarize(const std::vector<ClientFlowRecord> &records, std::uint64_t link_rate_bps,
			 std::uint64_t base_rtt_ns)
{
	TrafficSummary s;
	std::vector<double> fct_us, slow;
	std::uint64_t first_start = UINT64_MAX, last_end = 0;
	for (const auto &r : records) {
		s.flows++;
		s.bytes += r.bytes;
		first_start = std::min(first_start, r.start_ns);
		last_end = std::max(last_end, r.end_ns);
		if (r.status != "ok") {
			s.errors++;
			continue;
		}
		s.completed++;
		std::uint64_t fct = r.end_ns - r.start_ns;
		fct_us.push_back(static_cast<double>(fct) / 1e3);
		slow.push_back(slowdown(fct, ideal_fct_ns(r.size_bytes, link_rate_bps, base_rtt_ns)));
	}
	if (last_end > first_start)
		s.goodput_mbps = static_cast<double>(s.bytes) * 8e3 / static_cast<double>(last_end - first_start);
	s.fct_p50_us = percentile_at(fct_us, 50);
	s.fct_p99_us = percentile_at(fct_us, 99);
	s.slowdown_p50 = percentile_at(slow, 50);
	s.slowdown_p99 = percentile_at(slow, 99);
	return s;
}

std::string summary_json(const TrafficSummary &s)
{
	Json fct, slow;
	fct.num("p50", s.fct_p50_us).num("p99", s.fct_p99_us);
	slow.num("p50", s.slowdown_p50).num("p99", s.slowdown_p99);
	Json j;
	j.num("flows", s.flows).num("completed", s.completed).num("errors", s.errors).num("bytes", s.bytes);
	j.num("goodput_mbps", s.goodput_mbps).raw("fct_us", fct.dump()).raw("slowdown", slow.dump());
	j.num("cpu_user_s", s.cpu_user_s).num("cpu_sys_s", s.cpu_sys_s);
	return j.dump();
}

std::string summary_text(const TrafficSummary &s)
{
	char buf[512];
	std::snprintf(buf, sizeof(buf),
		      "flows %llu, completed %llu, errors %llu, bytes %llu, goodput %.1f Mbit/s\n"
		      "FCT p50 %.1f us, p99 %.1f us; slowdown p50 %.2f, p99 %.2f\n"
		      "CPU user %.2f s, sys %.2f s\n",
		      static_cast<unsigned long long>(s.flows), static_cast<unsigned long long>(s.completed),
		      static_cast<unsigned long long>(s.errors), static_cast<unsigned long long>(s.bytes),
		      s.goodput_mbps, s.fct_p50_us, s.fct_p99_us, s.slowdown_p50, s.slowdown_p99, s.cpu_user_s,
		      s.cpu_sys_s);
	return buf;
}

} // namespace lumen
