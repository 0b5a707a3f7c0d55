#!/bin/sh
# Guest /init (busybox sh), put in the initramfs by `cargo xtask`. The mode comes from the kernel
# command line (`rstreams.mode=test|vm|bench|probe`). Markers the host reads (xtask/src/ktap.rs):
#   RSTREAMS-STEP <name> rc=<n>   one step of the test run (non-zero fails the run)
#   RSTREAMS-END rc=<n>           the test run finished (missing = failure)
#   RSTREAMS-VM-START / RSTREAMS-EXIT rc=<n>   around the user command of `cargo xtask vm`
#   RSTREAMS-BENCH-* / RSTREAMS-SCLS          the sweep of `cargo xtask bench` (xtask/src/bench.rs)
#   RSTREAMS-BENCH-PROF                       its guest profile (xtask/src/profile.rs)
# Mode `stress` (`cargo xtask stress`) is test mode's end without the tests: strstress with the
# arguments of /etc/rstreams/stress.args, then kmemleak and unload.
export PATH=/usr/bin:/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug
mount -t tmpfs tmpfs /tmp
ip link set lo up 2>/dev/null
mode=probe
KMEMLEAK=/sys/kernel/debug/kmemleak
STRESS=/usr/bin/strstress
for a in $(cat /proc/cmdline); do
	case "$a" in
	rstreams.mode=*) mode=${a#rstreams.mode=} ;;
	# The negative control only needs the KUnit verdict: no leak scans, no stress run.
	rstreams.noleakscan) KMEMLEAK=/nonexistent STRESS=/nonexistent ;;
	esac
done
fail=0

step() {
	name=$1
	shift
	echo "RSTREAMS-STEP-BEGIN $name"
	"$@"
	rc=$?
	echo "RSTREAMS-STEP $name rc=$rc"
	[ "$rc" = 0 ] || fail=1
}

unload() {
	modprobe -r streams && ! grep -q '^streams ' /proc/modules
}

# The production modules DKMS built from the rstreams-dkms sources (cargo xtask test puts them
# where `dkms build` leaves them), installed as `dkms install` does, after the test build is
# unloaded and removed: modprobe must pull in strshim and strattach, the packaged perftest, scls
# and libstreams_pipe.so must work on them, and modprobe -r must remove all three.
dkms_modules() {
	r=$(uname -r)
	set -- /var/lib/dkms/rstreams/*/"$r"/*/module/streams.ko
	[ -e "$1" ] || { echo "dkms: no DKMS-built streams.ko for $r"; return 1; }
	rm -r /lib/modules/"$r"/extra
	mkdir -p /lib/modules/"$r"/updates/dkms
	cp "${1%/*}"/*.ko /lib/modules/"$r"/updates/dkms/ || return 1
	depmod || return 1
	modprobe streams || { echo "dkms: modprobe streams failed"; return 1; }
	for m in strshim strattach streams; do
		grep -q "^$m " /proc/modules || { echo "dkms: modprobe streams did not load $m"; return 1; }
	done
	# The production build: no test driver.
	[ -e /dev/streams/clone/sloop ] && { echo "dkms: a test device with the production modules"; return 1; }
	[ -c /dev/streams/clone/pipe ] || { echo "dkms: no /dev/streams/clone/pipe"; return 1; }
	scls pipemod | grep -q pipemod || { echo "dkms: scls does not list pipemod"; return 1; }
	# One second of STREAMS pipe writes: the CSV line's 4th field is the count.
	row=$(perftest -p streams -q -r -t 1 -i 1 -s 64 --csv </dev/null | tail -n 1)
	echo "dkms: perftest: $row"
	[ "$(echo "$row" | cut -d, -f4)" -gt 0 ] 2>/dev/null || { echo "dkms: perftest wrote nothing"; return 1; }
	# The packaged preload, found by name (it is in the multiarch library directory).
	is=$(LD_PRELOAD=libstreams_pipe.so dash -c 'echo x | pipetest --isastream 0')
	[ "$is" = 1 ] || { echo "dkms: the preloaded pipe is not a Stream ($is)"; return 1; }
	modprobe -r streams || return 1
	for m in streams strattach strshim; do
		grep -q "^$m " /proc/modules && { echo "dkms: modprobe -r streams left $m loaded"; return 1; }
	done
	echo "dkms: modprobe loaded and removed streams, strattach, strshim from updates/dkms"
}

# The guest profile of cargo xtask bench, after the sweep (xtask/src/profile.rs parses the
# markers; keep them in step): perf record -e cpu-clock -a -g over one perftest run per line of
# the plan $1 (LABEL SIZE PERFTEST-ARGS...), then three reports: the perftest processes' top
# symbols by self time and with children, and the share of every command. perf is the host's,
# with its libraries and loader in /opt/perf.
bench_profile() {
	plan=$1
	perf="/opt/perf/ld.so --library-path /opt/perf/lib /opt/perf/perf"
	echo 0 >/proc/sys/kernel/kptr_restrict
	echo -1 >/proc/sys/kernel/perf_event_paranoid
	# -t '|': perf puts the separator only between fields (it replaces it inside names).
	# shellcheck disable=SC2086 # $perf is a word list on purpose
	report() { timeout 300 $perf report -i /tmp/perf.data --stdio -g none -t '|' "$@" 2>>/tmp/perr; }
	echo "guest profile: $(grep -c . "$plan") case(s) under perf record (rates under perf are not bench figures)"
	while read -r label size args; do
		[ -n "$label" ] || continue
		m="RSTREAMS-BENCH-PROF $label $size"
		echo "$m start"
		t0=$(date +%s)
		# The sweep's watchdog (-t and -i are words 4 and 6 of $args).
		lim=$(echo "$args" | awk '{ printf "%d", $4 * $6 * 3 + 30 }')
		# shellcheck disable=SC2086 # $perf and $args are word lists on purpose
		timeout "$lim" $perf record -q -N -B -e cpu-clock -a -g -o /tmp/perf.data -- \
			perftest $args --csv --label="$label" </dev/null >/tmp/out 2>/tmp/err
		rc=$?
		sed "s|^|$m note |" /tmp/err
		row=$(tail -n 1 /tmp/out)
		if [ "$rc" != 0 ] || [ -z "$row" ]; then
			echo "$m fail perf record (perftest $label) exit status $rc"
			echo "profile $label size $size: failed (rc=$rc) $(tail -n 1 /tmp/err)"
			rm -f /tmp/perf.data
			continue
		fi
		echo "$m row $row"
		: >/tmp/perr
		report --no-children --sort comm >/tmp/rep
		sed -n "s|^# Samples: |$m samples |p" /tmp/rep | head -n 1
		grep -v '^#' /tmp/rep | grep . | head -n 8 | sed "s|^|$m comm |"
		report --no-children --comm perftest --sort sym | grep -v '^#' | grep . | head -n 40 | sed "s|^|$m self |"
		report --children --comm perftest --sort sym | grep -v '^#' | grep . | head -n 40 | sed "s|^|$m children |"
		sed "s|^|$m note perf report: |" /tmp/perr | head -n 5
		rm -f /tmp/perf.data /tmp/rep
		echo "$m end"
		echo "profile $label size $size: recorded and reported in $(($(date +%s) - t0)) s"
	done <"$plan"
}

leaks() {
	# kmemleak only reports objects older than 5 s, and a second scan drops transient ones.
	sleep 6
	echo scan > $KMEMLEAK
	echo scan > $KMEMLEAK
	# (debugfs files report size 0: read the contents, do not test the size)
	report=$(cat $KMEMLEAK)
	if [ -n "$report" ]; then
		echo "RSTREAMS-KMEMLEAK: leaks reported:"
		echo "$report"
		# Report each leak once: later scans show only new ones.
		echo clear > $KMEMLEAK
		return 1
	fi
	echo "no leaks reported"
}

case "$mode" in
probe)
	echo RSTREAMS-PROBE-OK
	;;
test)
	echo "RSTREAMS-BEGIN $(uname -r) cpus=$(grep -c ^processor /proc/cpuinfo)"
	# Forget boot-time objects: only leaks from our modules and tests matter.
	[ -e $KMEMLEAK ] && echo clear > $KMEMLEAK
	step depmod depmod
	# Loading runs every KUnit suite of the module (results on the console as KTAP).
	step modprobe modprobe streams
	# STREAMS devices end to end from user space (tests/vm/strtest), with the module loaded once.
	[ -x /usr/bin/strtest ] && step strtest strtest
	# The same system calls from C (tests/vm/ctest: <stropts.h> + libstreams.a). xtask always
	# builds it, so no -x test: a missing program fails the step.
	step strc strc
	# An XTI program as existing ones are written (tests/vm/ctest/xti/xtiudp.c: <xti.h> only):
	# datagrams both ways and ICMP port unreachable as T_UDERR over /dev/streams/clone/udp.
	step xtiudp xtiudp
	# Pipe conformance, Linux pipes and STREAMS pipes (tests/vm/pipetest).
	[ -x /usr/bin/pipetest ] && step pipetest pipetest
	# Shell-level suites, with the module still loaded: loading it again would run every KUnit
	# suite a second time.
	for s in /tests/vm/suites/*.sh; do
		[ -e "$s" ] || continue
		step "suite-$(basename "$s" .sh)" sh "$s"
	done
	# Random system calls from 4 processes x 3 threads, 3x10^5 of them (2-5 min at the 1,100-2,300/s of
	# the KASAN guest under TCG) (docs/stress.md), before the leak scans and the unload below
	# judge what they left. Then the fault-injection pass (tests/vm/fault.sh, docs/stress.md): 5%
	# of our modules' allocations fail under strtest and 10^5 strstress calls, the strstress calls
	# with the message block cache off so that KASAN sees every block (~1.5 min).
	[ -x $STRESS ] && step strstress strstress -n 300000 -p 4 -t 3 -s 1 --max-secs 480
	[ -x $STRESS ] && step faults sh /tests/vm/fault.sh 5 100000
	# Scan while the module is loaded (backtraces name its functions), then after unloading
	# (memory the module did not give back at exit).
	[ -e $KMEMLEAK ] && step kmemleak-loaded leaks
	step rmmod unload
	[ -e $KMEMLEAK ] && step kmemleak-unloaded leaks
	# Only cargo xtask test's guest has them (not the negative control's); xtask fails a run
	# where this step is missing.
	[ -d /var/lib/dkms/rstreams ] && step dkms dkms_modules
	echo "RSTREAMS-END rc=$fail"
	;;
stress)
	echo "RSTREAMS-BEGIN $(uname -r) cpus=$(grep -c ^processor /proc/cpuinfo)"
	[ -e $KMEMLEAK ] && echo clear > $KMEMLEAK
	step depmod depmod
	step modprobe modprobe streams
	# shellcheck disable=SC2046 # the argument list is words on purpose
	step strstress strstress $(cat /etc/rstreams/stress.args)
	# shellcheck disable=SC2046
	[ -e /etc/rstreams/faults ] && step faults sh /tests/vm/fault.sh $(cat /etc/rstreams/faults)
	[ -e $KMEMLEAK ] && step kmemleak-loaded leaks
	step rmmod unload
	[ -e $KMEMLEAK ] && step kmemleak-unloaded leaks
	echo "RSTREAMS-END rc=$fail"
	;;
vm)
	depmod && modprobe streams || echo "RSTREAMS: loading streams.ko failed"
	cd /host 2>/dev/null || cd /
	echo RSTREAMS-VM-START
	sh -c "$(cat /etc/rstreams/cmd)"
	echo "RSTREAMS-EXIT rc=$?"
	;;
bench)
	# cargo xtask bench (xtask/src/bench.rs parses these markers; keep them in step).
	if depmod && modprobe streams; then mod=ok; else mod=failed; fi
	echo "RSTREAMS-BENCH-ENV modprobe=$mod"
	echo "RSTREAMS-BENCH-ENV kernel=$(uname -r)"
	echo "RSTREAMS-BENCH-ENV cpus=$(grep -c ^processor /proc/cpuinfo)"
	echo "RSTREAMS-BENCH-ENV cpu=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
	echo "RSTREAMS-BENCH-ENV mem=$(grep MemTotal /proc/meminfo | sed 's/  */ /g')"
	echo RSTREAMS-VM-START
	echo "scls -a: $(scls -a 2>&1 | wc -l) lines (in the report)"
	scls -a 2>&1 | sed 's/^/RSTREAMS-SCLS /'
	plan=/etc/rstreams/bench.plan
	n=$(grep -c . $plan)
	t0=$(date +%s)
	echo "perftest sweep: $n runs (pipes, UDP on 127.0.0.1, the syscall floor, bw/grep/flex)"
	# Plan lines: N LABEL SIZE REP PERFTEST-ARGS...
	while read -r i label size rep args; do
		[ -n "$i" ] || continue
		echo "RSTREAMS-BENCH-RUN $i/$n $label $size $rep"
		# A run that hangs is killed (so the sweep goes on); the limit is generous:
		# 3x the measuring time plus 30 s. -t and -i values are words 4 and 6 of $args (bench.rs base_args).
		lim=$(echo "$args" | awk '{ printf "%d", $4 * $6 * 3 + 30 }')
		# shellcheck disable=SC2086 # $args is a word list on purpose
		timeout "$lim" perftest $args --csv --label="$label" </dev/null >/tmp/out 2>/tmp/err
		rc=$?
		sed "s/^/RSTREAMS-BENCH-NOTE $i /" /tmp/err
		row=$(tail -n 1 /tmp/out)
		el=$(($(date +%s) - t0))
		prog=$(printf '[%3d/%d] %2d:%02d' "$i" "$n" $((el / 60)) $((el % 60)))
		if [ "$rc" = 0 ] && [ -n "$row" ]; then
			echo "RSTREAMS-BENCH-ROW $i $row"
			rate=$(echo "$row" | cut -d, -f5 | cut -d. -f1)
			case "$label" in
			udp-*)
				# The UDP test: sent and received messages/s (CSV fields 5 and 10).
				recv=$(echo "$row" | cut -d, -f10 | cut -d. -f1)
				printf '%s %-16s size %5s rep %s: %9s sent/s %9s received/s\n' "$prog" "$label" "$size" "$rep" "$rate" "$recv"
				;;
			syscall)
				printf '%s %-16s rep %s: %9s calls/s\n' "$prog" "$label" "$rep" "$rate"
				;;
			bw-* | grep-* | flex-*)
				# The seed-001 workloads: MB/s (CSV field 6, bytes/s).
				mbs=$(echo "$row" | cut -d, -f6 | awk '{ printf "%.2f", $1 / 1e6 }')
				printf '%s %-18s size %5s rep %s: %9s MB/s\n' "$prog" "$label" "$size" "$rep" "$mbs"
				;;
			*)
				printf '%s %-16s size %5s rep %s: %9s writes/s\n' "$prog" "$label" "$size" "$rep" "$rate"
				;;
			esac
		else
			echo "RSTREAMS-BENCH-FAIL $i rc=$rc"
			printf '%s %-16s size %5s rep %s: no result (rc=%s) %s\n' "$prog" "$label" "$size" "$rep" "$rc" "$(tail -n 1 /tmp/err)"
		fi
	done <$plan
	echo "RSTREAMS-BENCH-ENV sweep_secs=$(($(date +%s) - t0))"
	# Again after the sweep: with kernel statistics this shows what the runs did.
	scls -a 2>&1 | sed 's/^/RSTREAMS-SCLS-AFTER /'
	echo "RSTREAMS-BENCH-DONE n=$n"
	# After the sweep, so that no measured run shares the guest with perf.
	[ -s /etc/rstreams/profile.plan ] && bench_profile /etc/rstreams/profile.plan
	echo "RSTREAMS-EXIT rc=0"
	;;
*)
	echo "RSTREAMS: unknown mode $mode"
	;;
esac
sync
reboot -f
