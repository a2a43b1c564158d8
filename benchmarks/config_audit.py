#!/usr/bin/env python3
# Random small configs over every code, rule, delay model, straggler policy, decoder, rescale and
# data kind, each run through `stragglersim run` and `theory`; any exit status other than 0, 2 or
# 3 (an internal error, a crash) or a 60 s hang is printed. Used for benchmarks/fuzzing.md:
#   /usr/bin/python3 benchmarks/config_audit.py build/release/experiments/stragglersim 2000 7
# (scratch files in /tmp/audit).
import json, random, subprocess, sys, os
binary = sys.argv[1]; count = int(sys.argv[2]); seed = int(sys.argv[3])
rng = random.Random(seed)
codes = [{"kind":"uncoded"},{"kind":"frc","d":2},{"kind":"frc","d":4},{"kind":"crc","s":1},{"kind":"crc","s":3},
         {"kind":"cyclic_mds","s":1},{"kind":"bgc","d":1},{"kind":"bgc","d":3},{"kind":"expander","d":2},{"kind":"expander","d":3},
         {"kind":"sgc","d":1},{"kind":"sgc","d":2},{"kind":"sgc","d":2,"p":0.3}]
def rules(n):
    return [{"rule":"all"},{"rule":"first_r","r":1},{"rule":"first_r","r":n},{"rule":"first_r","fraction":0.5},
            {"rule":"deadline","after":0.01},{"rule":"deadline","after":2.5},{"rule":"decodable"},
            {"rule":"first_r_or_decodable","r":max(1,n//2)},{"rule":"first_r_or_decodable","r":1}]
def delays(n):
    return [{"kind":"shifted_exponential"},{"kind":"shifted_exponential","tail":"none","shift":0,"rate":5},
            {"kind":"pareto","shape":0.8},{"kind":"pareto","tail":"none"},{"kind":"bimodal","slow_probability":0.9,"slowdown":50},
            {"kind":"heterogeneous","factors":[1+ (i%3) for i in range(n)]}]
datas = [None,
 {"source":"synthetic","generator":"linear_regression","rows":48,"features":3,"condition":100},
 {"source":"synthetic","generator":"gaussian_mixture","rows":48,"features":3,"separation":0.0},
 {"source":"synthetic","generator":"kc_housing_like","rows":60,"features":40},
 {"source":"synthetic","generator":"amazon_like","rows":60,"features":50,"positive_fraction":0.99}]
bad = 0
for k in range(count):
    n = rng.choice([1,2,3,4,6,8,12])
    data = rng.choice(datas)
    c = {"name":"a","seed":rng.randrange(1,1000),"workers":n,"data":data,"code":dict(rng.choice(codes)),
         "stopping":rng.choice(rules(n)),"delay":rng.choice(delays(n)),"stragglers":rng.choice(["cancel","finish","drain"]),
         "optimizer":{"kind":rng.choice(["gd","nesterov"]),"iterations":rng.choice([0,1,3,7])}}
    if rng.random()<0.3: c["partitions"]=rng.choice([1,n,2*n,3*n])
    if data is not None:
        c["loss"]={"kind":"least_squares" if data["generator"] in ("linear_regression","kc_housing_like") else "logistic","l2":rng.choice([0,0.1,10])}
        c["optimizer"]["step"]=rng.choice(["auto",0.5,1e3,1e-9])
        c["rescale"]=rng.choice(["none","expected","empirical"])
        if rng.random()<0.3: c["target_loss"]=rng.choice([0.0,0.5,1e9])
    if rng.random()<0.4: c["code"]["decoder"]=rng.choice(["exact","one_step","optimal"])
    os.makedirs("/tmp/audit", exist_ok=True); path=f"/tmp/audit/c{k}.json"; json.dump(c,open(path,"w"))
    for cmd in (["run",path,"--out",f"/tmp/audit/o{k}"],["theory",path]):
        try:
            p=subprocess.run([binary]+cmd,capture_output=True,text=True,timeout=60)
            code=p.returncode
        except subprocess.TimeoutExpired:
            code="timeout"; p=None
        if code not in (0,2,3):
            bad+=1; print(cmd[0], code, path, (p.stderr.strip()[-300:] if p else ""), flush=True)
    subprocess.run(["rm","-rf",f"/tmp/audit/o{k}"])
print("bad", bad, "of", count)
