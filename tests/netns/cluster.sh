#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The starfold authors
#
# A cluster of K nodes on this machine: each node is a network namespace with one address on a bridge
# of the root namespace, its uplink shaped to RATE in both directions with the tbf qdisc, and
# PROGRAM runs under mpirun with R ranks inside each node's namespace. Ranks of one node reach each
# other inside their namespace (unshaped); ranks of different nodes only through the shaped TCP links.
#
#   node 0 (netns sfN-0)                              node 1 (netns sfN-1)
#   ranks 0 .. R-1                                    ranks R .. 2R-1
#   10.M.N.1 [veth, tbf RATE out] --- bridge sfbrN --- [veth, tbf RATE out] 10.M.N.2
#              (tbf RATE into the node on the bridge side too)
#
# Usage: tests/netns/cluster.sh [--nodes K] [--ranks-per-node R] [--rate RATE] [--burst B]
#                               [--tag NAME] [--mpirun-args "ARGS"] -- PROGRAM [ARGS...]
#
#   --nodes K           nodes (default 2)
#   --ranks-per-node R  ranks per node (default 2)
#   --rate RATE         each node's link, as tc writes rates: 1gbit, 100mbit, 8kbit; "none": unshaped
#                       (default 1gbit)
#   --burst B           tbf's bucket (default 256kb; a rate needs a bucket of at least rate / HZ)
#   --tag NAME          name the cluster's pieces after NAME (at most 8 characters, letters and
#                       digits; default sf and this script's pid): node i is the namespace NAME-i,
#                       its interface NAMEni (NAMEhi on the bridge NAMEbr), so that a test can reach
#                       in while the program runs (take a link down, stop a rank)
#   --mpirun-args A     more arguments for mpirun (one string, split on spaces)
#
# Open MPI is told to move bytes with TCP only (--mca btl tcp,self), on the cluster's subnet: shared
# memory would cross the namespaces. Its out-of-band channel, mpirun's PMIx server, listens on TCP
# (PMIx 4 has no Unix sockets): it is told to take connections beyond the loopback, and the ranks
# reach it at the bridge's address, over their node's link. PROGRAM sees STARFOLD_NETNS_NODE (its node) and
# STARFOLD_NETNS_NODES in its environment.
#
# Needs root and a kernel that allows network namespaces, veth and tbf; exits 77 with the reason
# otherwise. Everything it made (namespaces, links, the bridge) is removed on every exit path,
# Ctrl-C and a failed run included. Exit status: PROGRAM's under mpirun (mpirun's), 2 for bad
# arguments, 77 when this machine cannot host the cluster.
set -u

nodes=2
per_node=2
rate=1gbit
burst=256kb
extra=
tag=sf$$
usage() {
    echo "usage: tests/netns/cluster.sh [--nodes K] [--ranks-per-node R] [--rate RATE] [--burst B] [--mpirun-args A] -- PROGRAM [ARGS...]" >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case $1 in
        --nodes) [ $# -ge 2 ] || usage; nodes=$2; shift 2 ;;
        --ranks-per-node) [ $# -ge 2 ] || usage; per_node=$2; shift 2 ;;
        --rate) [ $# -ge 2 ] || usage; rate=$2; shift 2 ;;
        --burst) [ $# -ge 2 ] || usage; burst=$2; shift 2 ;;
        --tag) [ $# -ge 2 ] || usage; tag=$2; shift 2 ;;
        --mpirun-args) [ $# -ge 2 ] || usage; extra=$2; shift 2 ;;
        --) shift; break ;;
        *) usage ;;
    esac
done
[ $# -ge 1 ] || usage
case $nodes in '' | *[!0-9]*) usage ;; esac
case $per_node in '' | *[!0-9]*) usage ;; esac
[ "$nodes" -ge 1 ] && [ "$nodes" -le 250 ] && [ "$per_node" -ge 1 ] || usage
case $tag in '' | *[!a-z0-9]*) usage ;; esac
[ ${#tag} -le 8 ] || usage

skip() {
    echo "cluster.sh: skipped: $*" >&2
    exit 77
}
[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces)"
command -v ip >/dev/null 2>&1 || skip "no ip(8) (Debian's iproute2)"
command -v tc >/dev/null 2>&1 || skip "no tc(8) (Debian's iproute2)"
command -v mpirun >/dev/null 2>&1 || skip "no mpirun"

# Names of this run: short (interface names hold 15 characters), unique per process unless --tag.
bridge=${tag}br
net=10.$(($$ / 256 % 200 + 20)).$(($$ % 256))
ns() { echo "$tag-$1"; }

made_bridge=0
made_nodes=0
mpirun_pid=
cleanup() {
    trap - EXIT HUP INT TERM
    if [ -n "$mpirun_pid" ]; then kill "$mpirun_pid" 2>/dev/null; fi
    i=0
    while [ "$i" -lt "$made_nodes" ]; do
        # Removing a namespace ends its veth, and the peer on the bridge with it.
        ip netns pids "$(ns $i)" 2>/dev/null | xargs -r kill -9 2>/dev/null
        ip netns del "$(ns $i)" 2>/dev/null
        ip link del "${tag}h$i" 2>/dev/null
        i=$((i + 1))
    done
    [ "$made_bridge" -eq 0 ] || ip link del "$bridge" 2>/dev/null
}
trap 'cleanup' EXIT
trap 'exit 130' HUP INT TERM

shape() { # DEV [NETNS]: tbf at $rate on DEV's egress (in NETNS when given)
    [ "$rate" = none ] && return 0
    # shellcheck disable=SC2086 # the prefix is a word list or nothing
    ${2:+ip netns exec "$2"} tc qdisc add dev "$1" root tbf rate "$rate" burst "$burst" latency 50ms
}

ip link add "$bridge" type bridge 2>/dev/null || skip "cannot make a bridge (ip link add type bridge)"
made_bridge=1
# The bridge's own address is where the ranks reach mpirun's PMIx server (see below).
ip addr add "$net.254/24" dev "$bridge"
ip link set "$bridge" up
i=0
while [ "$i" -lt "$nodes" ]; do
    n=$(ns $i)
    ip netns add "$n" 2>/dev/null || skip "cannot make a network namespace (ip netns add)"
    made_nodes=$((i + 1))
    ip link add "${tag}h$i" type veth peer name "${tag}n$i" || skip "cannot make a veth pair"
    ip link set "${tag}n$i" netns "$n"
    ip link set "${tag}h$i" master "$bridge" up
    ip netns exec "$n" ip link set lo up
    ip netns exec "$n" ip addr add "$net.$((i + 1))/24" dev "${tag}n$i"
    ip netns exec "$n" ip link set "${tag}n$i" up
    # The node's uplink, both ways: out of the node, and out of the bridge into the node.
    shape "${tag}n$i" "$n" || skip "cannot shape a link with tbf (tc qdisc add ... tbf rate $rate)"
    shape "${tag}h$i" || skip "cannot shape a link with tbf"
    i=$((i + 1))
done

# mpirun's MPMD form: one app context per node, each starting its ranks inside its namespace.
# The program and its arguments are quoted once for the shell that expands $apps below.
prog=
for a in "$@"; do
    prog="$prog '$(printf '%s' "$a" | sed "s/'/'\\\\''/g")'"
done
cmd=$(i=0; while [ "$i" -lt "$nodes" ]; do
    [ "$i" -eq 0 ] || printf ' :'
    printf " -np %s -x STARFOLD_NETNS_NODE=%s ip netns exec %s%s" "$per_node" "$i" "$(ns $i)" "$prog"
    i=$((i + 1))
done)
export STARFOLD_NETNS_NODES="$nodes"
export PMIX_MCA_ptl_tcp_remote_connections=1 PMIX_MCA_ptl_tcp_if_include="$bridge"
root_flags=
[ "$(id -u)" -eq 0 ] && root_flags=--allow-run-as-root
# shellcheck disable=SC2086 # $extra and $cmd are word lists, built above
eval "mpirun $root_flags --oversubscribe --bind-to none --mca btl tcp,self --mca btl_tcp_if_include $net.0/24 \
    --mca oob_tcp_if_include lo -x STARFOLD_NETNS_NODES $extra $cmd" &
mpirun_pid=$!
wait "$mpirun_pid"
status=$?
mpirun_pid=
exit "$status"
