// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// userspace/experiment/report_plot.h - PNG plots of an experiment with gnuplot
// (pngcairo). Each plot is a self-contained gnuplot script with its data
// inline (datablocks), kept next to the PNG in DIR/gnuplot/ so a user can
// restyle a figure and re-run `gnuplot NAME.gp` in DIR.
#pragma once

#include <string>
#include <vector>

#include "experiment/report.h"

namespace lumen
{

struct PlotScript {
	std::string name; // "throughput" -> throughput.png / gnuplot/throughput.gp
	std::string title;
	std::string script;
};

// The plots the runs have data for: throughput per flow, queue over time,
// cwnd of long flows, FCT slowdown per size bucket (poisson traffic), incast
// queue peak and drain time (incast phases).
std::vector<PlotScript> plot_scripts(const std::vector<RunData> &runs, const std::vector<RunSummary> &summaries);

// Writes DIR/gnuplot/NAME.gp and runs gnuplot in DIR for each; Error naming
// the plot and gnuplot's message when one fails. Returns the PNG paths.
std::vector<std::string> render_plots(const std::vector<PlotScript> &plots, const std::string &dir);

} // namespace lumen
