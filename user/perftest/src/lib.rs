//! perftest: the Linux Fast-STREAMS `perftest(8)` pipe benchmark for rstreams, plus the
//! `perftest_script` sweep and a report in the style of the LfS pipe papers.
//!
//! Method (LfS pipe paper §4.1): open one channel (a Linux pipe, a UNIX socketpair or a
//! STREAMS pipe), fork a writer child and a reader child; the writer writes `size`-byte
//! messages (write(2), or putmsg(2) with `--putmsg`) for the report interval(s), the reader
//! reads them; each child tallies per interval and prints the LfS report line. The writer's
//! rate (writes/s) is the figure of merit; delay is its inverse, throughput rate × size.
//!
//! * [`cli`]: the command lines of `perftest` and `scls` (clap), also rendered as man pages.
//! * [`opts`]: the LfS option set (and ours) of one run.
//! * [`run`]: one measurement.
//! * [`csv`]: the machine-readable result line.
//! * [`sweep`]: `perftest sweep`, the `perftest_script` loop writing CSV.
//! * [`report`]: `perftest report`, tables (report.md) and gnuplot PNG charts.
//! * [`scls`]: the `scls` binary's listing of STREAMS modules, drivers and statistics.
//! * [`udp`]: the UDP test of the LfS UDP papers (`--udp socket|tpi|xtiso`): a sender and a
//!   receiver on 127.0.0.1, messages sent and received per second.

pub mod cli;
pub mod csv;
pub mod opts;
pub mod report;
pub mod run;
pub mod scls;
pub mod sweep;
pub mod udp;
pub mod workload;
