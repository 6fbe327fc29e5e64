#!/usr/bin/env bash
# A real Slurm cluster on this one machine, for tests and the latency benchmark.
#
#   scripts/slurm-test-cluster.sh start  [DIR]   start (or keep) it; prints `export SLURM_CONF=...`
#   scripts/slurm-test-cluster.sh stop   [DIR]   cancel its jobs, stop every daemon it started
#   scripts/slurm-test-cluster.sh status [DIR]   daemons, nodes and queue; exit 0 when all is up
#   scripts/slurm-test-cluster.sh env    [DIR]   print the export line only
#
# Debian's slurm-wlm (22.05) and munge, as root: `apt-get install -y slurm-wlm munge`.
# One slurmctld and four slurmd daemons (node1..node4, each with its own port, started as
# `slurmd -N nodeK`), 8 CPUs and 8 fake GPUs per node (gres.conf File= points at plain files).
# Every state, spool, pid and log file lives under DIR (default: <repo>/.slurm-test).
# No accounting (no slurmdbd): `sacct` fails, so submitit warns "Bypassing sacct error";
# dlperf's submitter reads job states from `squeue` and has its own deadline.
#
# Environment: SLURM_TEST_NODES (4), SLURM_TEST_CPUS (8), SLURM_TEST_GPUS (8) per node,
# SLURM_TEST_PORT_BASE (17000: slurmctld on BASE, nodeK's slurmd on BASE+K).
set -euo pipefail

usage() {
    sed -n '2,7s/^# \{0,1\}//p' "$0" >&2
    exit 2
}

[[ $# -ge 1 && $# -le 2 ]] || usage
ACTION=$1
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=${2:-$REPO/.slurm-test}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)

NODES=${SLURM_TEST_NODES:-4}
CPUS=${SLURM_TEST_CPUS:-8}
GPUS=${SLURM_TEST_GPUS:-8}
PORT_BASE=${SLURM_TEST_PORT_BASE:-17000}
CLUSTER=dlperftest
CONF=$DIR/etc/slurm.conf
MARK="DLPERF_SLURM_TEST_DIR=$DIR"  # in the environment of every daemon started here
export SLURM_CONF=$CONF

log() { echo "slurm-test-cluster: $*" >&2; }
die() { log "error: $*"; exit 1; }

alive() {  # alive PIDFILE: the pid in it runs
    [[ -s $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null
}

node_names() { local k; for ((k = 1; k <= NODES; k++)); do echo "node$k"; done; }

require() {
    [[ $(id -u) -eq 0 ]] || die "must run as root (slurmd, and munged through runuser)"
    local tool
    for tool in munged munge unmunge slurmctld slurmd sinfo scontrol squeue scancel sbatch srun runuser; do
        command -v "$tool" >/dev/null || die "$tool not found: apt-get install -y slurm-wlm munge"
    done
}

write_config() {
    local host gres_files k new
    host=$(hostname -s)
    mkdir -p "$DIR"/{etc,state,spool,log,run,tmp,gpu}
    new=$(mktemp "$DIR/etc/.slurm.conf.XXXXXX")
    cat >"$new" <<EOF
# Written by scripts/slurm-test-cluster.sh: a test cluster on one host ($host).
ClusterName=$CLUSTER
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$PORT_BASE
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.%n.log
TmpFS=$DIR/tmp
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=1
SlurmdParameters=config_overrides
# a loaded test machine answers late: Slurm's default SlurmdTimeout, and a MessageTimeout above its
# default (as Slurm advises for shared nodes), so no node is set DOWN, or message lost, for a
# slow answer (the node-down test sets its node DOWN with scontrol)
SlurmdTimeout=300
SlurmctldTimeout=20
MessageTimeout=60
KillWait=5
InactiveLimit=0
MinJobAge=300
GresTypes=gpu
NodeName=node[1-$NODES] NodeHostname=$host NodeAddr=127.0.0.1 Port=[$((PORT_BASE + 1))-$((PORT_BASE + NODES))] CPUs=$CPUS RealMemory=16000 Gres=gpu:$GPUS State=UNKNOWN
PartitionName=debug Nodes=node[1-$NODES] Default=YES MaxTime=INFINITE State=UP
EOF
    gres_files=$(mktemp "$DIR/etc/.gres.conf.XXXXXX")
    echo "# One set of plain files per node: slurmd drops a GPU without File=." >"$gres_files"
    for k in $(node_names); do
        mkdir -p "$DIR/gpu/$k" "$DIR/spool/$k"
        for ((g = 0; g < GPUS; g++)); do : >"$DIR/gpu/$k/gpu$g"; done
        echo "NodeName=$k Name=gpu File=$DIR/gpu/$k/gpu[0-$((GPUS - 1))]" >>"$gres_files"
    done
    replace_if_changed "$new" "$CONF"
    replace_if_changed "$gres_files" "$DIR/etc/gres.conf"
    chmod 644 "$CONF" "$DIR/etc/gres.conf"
}

CONFIG_CHANGED=0
replace_if_changed() {  # replace_if_changed NEW TARGET
    if [[ -f $2 ]] && cmp -s "$1" "$2"; then rm -f "$1"; else mv -f "$1" "$2"; CONFIG_CHANGED=1; fi
}

munge_works() { munge -n 2>/dev/null | unmunge >/dev/null 2>&1; }

start_munge() {
    munge_works && return 0
    mkdir -p /run/munge /var/lib/munge /var/log/munge /etc/munge
    chown munge:munge /run/munge /var/lib/munge /var/log/munge
    chmod 755 /run/munge
    if [[ ! -s /etc/munge/munge.key ]]; then
        if command -v mungekey >/dev/null; then mungekey --create --keyfile=/etc/munge/munge.key
        else dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none; fi
        chown munge:munge /etc/munge/munge.key
        chmod 400 /etc/munge/munge.key
    fi
    env "$MARK" runuser -u munge -- munged
    local i
    for ((i = 0; i < 50; i++)); do
        if munge_works; then
            cp /run/munge/munged.pid "$DIR/run/munged.ours.pid" 2>/dev/null || true
            return 0
        fi
        sleep 0.2
    done
    die "munged did not answer (see /var/log/munge/munged.log)"
}

node_states() { sinfo -h -N -o '%N %t' 2>/dev/null | sort -u; }

wait_up() {  # wait until slurmctld answers and every node is usable
    local i states bad
    for ((i = 0; i < 300; i++)); do
        if scontrol ping 2>/dev/null | grep -q 'is UP'; then
            states=$(node_states || true)
            bad=$(awk '$2 !~ /^(idle|mix|alloc|comp)$/' <<<"$states")
            if [[ -n $states && -z $bad && $(wc -l <<<"$states") -eq $NODES ]]; then
                return 0
            fi
        fi
        sleep 0.2
    done
    log "nodes not idle after 60 s:"
    node_states >&2 || true
    tail -n 20 "$DIR/log/slurmctld.log" >&2 || true
    die "cluster did not come up (logs in $DIR/log)"
}

start() {
    require
    write_config
    if ((CONFIG_CHANGED)) && alive "$DIR/run/slurmctld.pid"; then
        log "configuration changed: restarting the cluster"
        stop
    fi
    start_munge
    local fresh=0 k
    if ! alive "$DIR/run/slurmctld.pid"; then
        fresh=1
        # -c: a fresh cluster, no jobs or node states (down, drain) from an earlier session
        env "$MARK" slurmctld -c -f "$CONF"
    fi
    for k in $(node_names); do
        if ! alive "$DIR/run/slurmd.$k.pid"; then
            env "$MARK" slurmd -f "$CONF" -N "$k"
        fi
    done
    wait_up
    ((fresh)) && log "started: $NODES nodes x $CPUS CPUs x $GPUS GPUs (logs in $DIR/log)" || log "already running"
    print_env
}

print_env() { echo "export SLURM_CONF=$CONF"; }

# Processes carrying our marker in their environment: the daemons and the slurmstepd they fork.
marked_pids() {
    local env_file pid
    for env_file in /proc/[0-9]*/environ; do
        pid=${env_file#/proc/}
        pid=${pid%/environ}
        [[ $pid == "$$" ]] && continue
        if { tr '\0' '\n' <"$env_file"; } 2>/dev/null | grep -qxF "$MARK"; then echo "$pid"; fi
    done
}

stop_pidfiles() {  # stop_pidfiles PIDFILE...: TERM all, KILL what still runs after 10 s
    local file pids=() pid i running
    for file in "$@"; do
        alive "$file" && pids+=("$(cat "$file")")
    done
    if ((${#pids[@]})); then
        kill -TERM "${pids[@]}" 2>/dev/null || true
        for ((i = 0; i < 50; i++)); do
            running=0
            for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && running=1; done
            ((running)) || break
            sleep 0.2
        done
        for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
    fi
    rm -f "$@"
}

stop() {
    local k i pids
    if [[ -f $CONF ]] && alive "$DIR/run/slurmctld.pid"; then
        scancel --quiet $(squeue -h -o %i 2>/dev/null) 2>/dev/null || true
        for ((i = 0; i < 75; i++)); do
            [[ -z $(squeue -h -o %i 2>/dev/null) ]] && break
            sleep 0.2
        done
    fi
    local files=("$DIR/run/slurmctld.pid")
    for k in $(node_names); do files+=("$DIR/run/slurmd.$k.pid"); done
    stop_pidfiles "${files[@]}"
    pids=$(marked_pids | grep -vxF "$(cat "$DIR/run/munged.ours.pid" 2>/dev/null || echo none)" || true)
    if [[ -n $pids ]]; then
        log "stopping leftover processes: $(tr '\n' ' ' <<<"$pids")"
        kill -TERM $pids 2>/dev/null || true
        sleep 1
        kill -KILL $pids 2>/dev/null || true
    fi
    stop_pidfiles "$DIR/run/munged.ours.pid"
    log "stopped"
}

status() {
    local ok=0 k
    [[ -f $CONF ]] || { log "no cluster in $DIR"; return 3; }
    alive "$DIR/run/slurmctld.pid" && echo "slurmctld: running (pid $(cat "$DIR/run/slurmctld.pid"))" \
        || { echo "slurmctld: stopped"; ok=1; }
    for k in $(node_names); do
        alive "$DIR/run/slurmd.$k.pid" && echo "slurmd $k: running (pid $(cat "$DIR/run/slurmd.$k.pid"))" \
            || { echo "slurmd $k: stopped"; ok=1; }
    done
    munge_works && echo "munge: answering" || { echo "munge: not answering"; ok=1; }
    if ((ok == 0)); then
        sinfo -N -o '%N %t %c %G' || ok=1
        squeue || ok=1
        print_env
    fi
    return $ok
}

case $ACTION in
start) start ;;
stop) stop ;;
status) status ;;
env) print_env ;;
*) usage ;;
esac
