/*
 * lumen-dp: lumen's DPDK datapath, a reliable message transport over UDP
 * whose source port is the entropy ECMP switches hash on.
 *
 *   lumen-dp [EAL options] -- MODE [options]
 *
 * As DPDK's own examples: EAL's options first, the application's after
 * "--". The application's options are checked before EAL starts, so a
 * typo costs nothing and leaves no hugepage or runtime file behind.
 */
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include <rte_eal.h>
#include <rte_errno.h>

#include "app/options.h"
#include "app/run.h"

using namespace lumen::dp;

int main(int argc, char **argv)
{
	const char *prog = "lumen-dp";
	int sep = -1;

	for (int i = 1; i < argc; i++)
		if (!std::strcmp(argv[i], "--")) {
			sep = i;
			break;
		}
	if (sep < 0) {
		bool help = argc == 2 && (!std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "--help"));
		print_usage(prog, nullptr);
		if (!help)
			std::fprintf(stderr, "\n%s: give EAL's options, then --, then a mode\n", prog);
		return help ? 0 : 2;
	}
	int app_argc = argc - sep - 1;
	char **app_argv = argv + sep + 1;
	if (app_argc < 1) {
		print_usage(prog, nullptr);
		std::fprintf(stderr, "\n%s: no mode after --\n", prog);
		return 2;
	}
	if (!std::strcmp(app_argv[0], "-h") || !std::strcmp(app_argv[0], "--help")) {
		print_usage(prog, nullptr);
		return 0;
	}
	const Mode *mode = find_mode(app_argv[0]);
	if (!mode) {
		std::fprintf(stderr, "%s: unknown mode '%s' (%s -- --help lists them)\n", prog, app_argv[0], prog);
		return 2;
	}
	if (mode->offline)
		return mode->offline(app_argc, app_argv);
	Options o;
	o.mode = mode->name;
	bool help = false;
	if (std::string e = parse_options(app_argc, app_argv, &o, &help); !e.empty()) {
		std::fprintf(stderr, "%s %s: %s\n", prog, mode->name, e.c_str());
		return 2;
	}
	if (help) {
		print_usage(prog, mode);
		return 0;
	}
	if (std::string e = mode->check(o); !e.empty()) {
		std::fprintf(stderr, "%s %s: %s\n", prog, mode->name, e.c_str());
		return 2;
	}

	if (rte_eal_init(sep, argv) < 0) {
		std::fprintf(stderr, "%s: EAL: %s\n", prog, rte_strerror(rte_errno));
		return 2;
	}
	install_signals();
	int rc = mode->run(o);
	/* EAL leaves its runtime directory (config, memory maps, sockets) for
	 * secondary processes; with the primary gone they serve nothing */
	std::string runtime = rte_eal_get_runtime_dir();
	bool primary = rte_eal_process_type() == RTE_PROC_PRIMARY;
	rte_eal_cleanup();
	if (primary) {
		std::error_code ec;
		std::filesystem::remove_all(runtime, ec);
	}
	return rc;
}
