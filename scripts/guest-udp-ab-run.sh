#!/bin/sh
# Run with: scripts/guest-profile.sh scripts/guest-udp-ab-run.sh (perf is copied but not used).
# TPI UDP with the transmit without the socket layer on and off (strshim's udp_fast_xmit),
# against socket UDP, in one boot, alternating; the bench's UDP options.
C="-q -r -t 1 -i 3 --bufsize=131071 --csv"
P=/sys/module/strshim/parameters
run() {
	label=$1; shift
	row=$(perftest $C "$@" 2>/dev/null | tail -1)
	echo "RUN $label fast=$(cat $P/udp_fast_xmit) $row"
}
for rep in 1 2; do
	for s in 1 64 1024 4096; do
		run socket -s $s --udp=socket
		echo 1 > $P/udp_fast_xmit
		run tpi-direct -s $s --udp=tpi
		echo 0 > $P/udp_fast_xmit
		run tpi-socket -s $s --udp=tpi
		echo 1 > $P/udp_fast_xmit
	done
done
echo "COUNTS fast=$(cat $P/udp_xmit_fast) socket=$(cat $P/udp_xmit_socket)"
