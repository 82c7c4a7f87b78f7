#!/usr/bin/env bash
# The GPU checks, in two stages, run from the repository root of a copied tree on a CUDA machine
# (python3 holding a CUDA torch; tdx is pure Python, so PYTHONPATH=. is its install):
#
#   bench/gpu.sh torch OUT   the suite's cuda rows, then bench/dispatch.py, bench/sdpa.py, bench/train.py,
#                            and transformers generation and training (bench/hf_generate.py,
#                            bench/hf_train.py) on cuda against native torch
#   bench/gpu.sh mlx OUT     MLX's CUDA build (wheels in WHEELS, default .whl1 .whl2: the `mlx` wheel and
#                            the parts of `mlx-cuda-13` as written by `split`, joined here), then the
#                            suite's mlx:gpu rows and the same benchmarks on mlx:gpu against native MLX
#
# Every step has its own time limit, so a stuck step costs its limit and the next one still runs.
# Logs, tables and plots go to OUT, eight files a stage at most (the benchmarks' logs, whose tables are
# written there, go to /tmp). The suite runs with -v, so a step cut by its limit still names the tests
# that failed; OUT/<step>.failed.txt lists them. This script only reads the tree; it installs into
# python3's own site-packages (MLX's CUDA library finds the CUDA libraries beside it there).
set -u
stage=${1:?stage: torch or mlx}
out=${2:?output folder}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
jobs=${JOBS:-14}
step() {  # step SECONDS NAME COMMAND...: run, log to LOG/NAME.log (LOG: OUT unless set), say how it ended
    local limit=$1 name=$2 log=${LOG:-$out}/$2.log
    shift 2
    local t0=$SECONDS
    timeout "$limit" "$@" >"$log" 2>&1
    echo "== $name: exit $? in $((SECONDS - t0)) s"
    tail -n 25 "$log"
}

failures() {  # failures NAME: the failed tests of OUT/NAME.log (-v names each as it ends), counted per file
    grep -aoE "(FAILED|ERROR) tests/[^ ]+" "$out/$1.log" | sort -u >"$out/$1.failed.txt"
    echo "== $1: $(wc -l <"$out/$1.failed.txt") failed; per file:"
    cut -d' ' -f2 "$out/$1.failed.txt" | cut -d: -f1 | sort | uniq -c | sort -rn | head -n 30
}

nvidia-smi -L
python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name(0))"
wheels=(${WHEELS:-.whl1 .whl2})
extra=$(ls "${wheels[0]}"/expecttest-*.whl 2>/dev/null)
[ -n "$extra" ] && python3 -m pip install -q --no-index --no-deps --no-cache-dir "$extra"

if [ "$stage" = torch ]; then
    python3 -m tdx info | head -n 20
    OMP_NUM_THREADS=2 step ${SUITE_LIMIT:-300} suite_cuda python3 -m pytest -p tdx.testing.plugin -n "$jobs" -v -rfE --timeout=60 \
        --max-worker-restart=100 --tdx-devices=cuda:0 -k cuda -p no:cacheprovider --tdx-failures "$out/suite_cuda.failures.txt" ${TESTS:-tests}
    failures suite_cuda
    LOG=/tmp step 40 dispatch_cuda python3 bench/dispatch.py --devices cpu,cuda:0 --repeats 7 --number 4000 --out /tmp/bench_out
    LOG=/tmp step 60 sdpa_cuda python3 bench/sdpa.py --devices cuda:0 --lengths 512,2048,8192 --dims 64,128 \
        --repeat 5 --budget 2 --min-time 0.05 --long 0 --no-memory --out /tmp/bench_out
    cp /tmp/bench_out/*.md "$out"  # the tables (their plots stay behind: eight files come back)
    step 70 train_cuda python3 bench/train.py --models gpt --configs S M --steps 12 --warmup 3 --torch-device cuda:0 \
        --no-rss --cpu-turns 1 --only "torch F" "tdx F" "torch nn" "tdx nn"
    step 110 models_cuda bash -c 'python3 bench/hf_generate.py --tokens 64 --repeats 3 --rounds 2 \
        --only "torch cuda,tdx cuda" && python3 bench/hf_train.py --gpu --models llama gpt2 --rounds 2 --steps 6'
    # the second stage's wheel part, kept outside the tree for the next call on this machine
    mkdir -p /tmp/gpu_wheels && cp "${wheels[0]}"/* /tmp/gpu_wheels/ 2>/dev/null
    exit 0
fi

cp "${wheels[1]}"/* /tmp/gpu_wheels/ 2>/dev/null
cat /tmp/gpu_wheels/mlxcuda.part.* >/tmp/mlx_cuda_13-0.32.4-py3-none-manylinux_2_35_x86_64.whl
python3 -m pip install -q --no-index --no-deps --no-cache-dir /tmp/gpu_wheels/mlx-0.32.4-*.whl \
    /tmp/mlx_cuda_13-0.32.4-py3-none-manylinux_2_35_x86_64.whl || exit 1
python3 -c "import mlx.core as mx; print('mlx', mx.__version__, 'cuda', mx.cuda.is_available(), mx.default_device())"
python3 -m tdx info | head -n 20
OMP_NUM_THREADS=2 step 150 suite_mlx_gpu python3 -m pytest -p tdx.testing.plugin -n "$jobs" -v -rfE --timeout=60 \
    --max-worker-restart=100 --tdx-devices=mlx:gpu -k "mlx and gpu" -p no:cacheprovider \
    --tdx-failures "$out/suite_mlx_gpu.failures.txt" tests
failures suite_mlx_gpu
LOG=/tmp step 30 dispatch_mlx_gpu python3 bench/dispatch.py --devices mlx:cpu,mlx:gpu --repeats 7 --number 4000 --out /tmp/bench_out
LOG=/tmp step 45 sdpa_mlx_gpu python3 bench/sdpa.py --devices mlx:gpu --lengths 512,2048,8192 --dims 64 \
    --repeat 5 --budget 2 --min-time 0.05 --long 0 --no-memory --out /tmp/bench_out
cp /tmp/bench_out/*.md "$out"
step 100 train_mlx_gpu python3 bench/train.py --models gpt lstm --configs S --steps 8 --warmup 2 --mlx-device mlx:gpu \
    --no-rss --only mlx "tdx F mlx" "tdx nn mlx" "mlx.nn lstm" "tdx nn lstm mlx"
exit 0
