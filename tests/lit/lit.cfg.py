# lit configuration for tessel's FileCheck tests.
import os
import lit.formats

config.name = "tessel"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tessel_obj_root, "tests", "lit")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py.in", "Inputs"]

bin_dir = os.path.join(config.tessel_obj_root, "bin")
config.environment["PATH"] = os.pathsep.join(
    [bin_dir, config.llvm_tools_dir, "/usr/lib/llvm-22/bin", config.environment.get("PATH", os.environ["PATH"])])
for var in ["CUDA_HOME", "CUDA_PATH", "TESSEL_PTXAS", "HOME"]:
    if var in os.environ:
        config.environment[var] = os.environ[var]
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "Inputs")))

# Tests that run ptxas need the CUDA toolkit (not a GPU).
if any(os.path.exists(os.path.join(d, "ptxas")) for d in
       [os.environ.get("CUDA_HOME", "") + "/bin", "/usr/local/cuda/bin"] +
       os.environ.get("PATH", "").split(os.pathsep)):
    config.available_features.add("ptxas")
