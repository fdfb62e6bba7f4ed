# A one-host Slurm cluster for tests, in a directory of its own: munged
# with a fresh key, slurmctld and slurmd on free loopback ports, this host
# as the only node. Source this file, then
#   slurm_start DIR   # exports SLURM_CONF; the daemons run as this user
#   slurm_stop DIR
# Needs Debian's slurmctld, slurmd, slurm-client and munge.

_free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

slurm_start() {
    local dir="$1" user node cpus mem
    mkdir -p "$dir/munge" "$dir/state" "$dir/spool" "$dir/log"
    chmod 755 "$dir" "$dir/munge"
    dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 2>/dev/null
    chmod 400 "$dir/munge/munge.key"
    munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
        --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
        --seed-file="$dir/munge/munged.seed"
    user="$(id -un)"
    node="$(hostname -s)"
    cpus="$(nproc)"
    mem="$(awk '/MemTotal/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)"
    cat > "$dir/slurm.conf" <<CONF
ClusterName=warpttest
SlurmctldHost=$node
SlurmUser=$user
SlurmdUser=$user
SlurmctldPort=$(_free_port)
SlurmdPort=$(_free_port)
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
MinJobAge=3600
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
    export SLURM_CONF="$dir/slurm.conf"
    slurmctld -c
    slurmd
    # Up when the node takes jobs.
    local i
    for i in $(seq 1 60); do
        if sinfo -h -o %T 2>/dev/null | grep -qx idle; then
            return 0
        fi
        sleep 0.5
    done
    echo "slurm: the node never became idle; logs in $dir/log" >&2
    tail -n 20 "$dir/log/"*.log >&2 || true
    return 1
}

slurm_stop() {
    local dir="$1" f
    for f in slurmd.pid slurmctld.pid munge/munged.pid; do
        if [[ -f "$dir/$f" ]]; then
            kill "$(cat "$dir/$f")" 2>/dev/null || true
        fi
    done
}
