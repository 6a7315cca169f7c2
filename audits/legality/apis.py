"""What library calls mean to the analysis: which produce log-probabilities, which update
parameters, which sample, serialize, download. Names are library APIs (resolved through the
script's imports, or tensor methods), never names participants choose."""

from __future__ import annotations

# Calls whose result is a log-probability or a loss over targets; with the argument that holds
# the target tokens (position, keyword), when there is one.
LOSS_CALLS = {
    "torch.nn.functional.cross_entropy": (1, "target"),
    "torch.nn.functional.nll_loss": (1, "target"),
    "torch.nn.functional.log_softmax": None,
    "torch.log_softmax": None,
    "torch.log": None,
    "torch.log2": None,
    "torch.log1p": None,
    "torch.logsumexp": None,
    "numpy.log": None,
    "numpy.log2": None,
    "numpy.log1p": None,
    "math.log": None,
    "math.log2": None,
    "math.log1p": None,
}
LOSS_METHODS = {"log_softmax", "log", "log2", "log1p", "logsumexp"}
# A log taken of something other than the scored token's probability can be a normalizer (log Z).
NORMALIZER_CALLS = {"torch.log", "torch.log1p", "torch.logsumexp", "numpy.log", "numpy.log1p",
                    "math.log", "math.log1p"}
NORMALIZER_METHODS = {"log", "log1p", "logsumexp"}
LOSS_MODULES = {"torch.nn.CrossEntropyLoss", "torch.nn.NLLLoss"}
PROB_CALLS = {"torch.softmax", "torch.nn.functional.softmax", "torch.exp", "numpy.exp", "math.exp"}
PROB_METHODS = {"softmax", "exp"}
GATHER_CALLS = {"torch.gather": (2, "index"), "torch.take_along_dim": (1, "indices"),
                "numpy.take_along_axis": (1, "indices")}
GATHER_METHODS = {"gather": (1, "index")}

# A module loaded at run time: `mod.f(...)` on the result runs a shipped script's `f`.
MODULE_LOADERS = {"importlib.util.module_from_spec", "importlib.import_module", "imp.load_source"}

# Sampling from the model: tokens made this way are self-generated, not data.
SAMPLE_CALLS = {"torch.multinomial"}
SAMPLE_METHODS = {"multinomial", "sample"}

# Positions drawn at random (with replacement, or a number of them): the data read at them is a
# sample, not every position. A permutation is every position in another order until it is cut
# short (`perm[:k]`).
RANDOM_CALLS = {"torch.randint", "numpy.random.randint", "numpy.random.choice", "random.randint",
                "random.randrange", "random.choice", "random.choices", "random.sample"}
RANDOM_METHODS = {"integers", "choice", "choices", "randint", "randrange"}  # of a generator
# Those that draw items of their first argument (`random.sample(docs, k)`), not numbers in bounds.
ITEM_DRAWS = {"random.choice", "random.choices", "random.sample", "numpy.random.choice", "choice", "choices"}
GENERATOR_CALLS = {"numpy.random.default_rng", "numpy.random.RandomState", "numpy.random.Generator",
                   "random.Random"}
PERMUTATION_CALLS = {"torch.randperm", "numpy.random.permutation"}
PERMUTATION_METHODS = {"permutation"}
SHUFFLE_CALLS = {"numpy.random.shuffle", "random.shuffle"}  # in place
SHUFFLE_METHODS = {"shuffle"}  # of a generator

# Making a fresh tensor from shapes and constants: it holds no data (unless it copies some:
# COPY_CALLS), and may be made to receive gradients (requires_grad=True).
CREATE_CALLS = {
    "torch.zeros", "torch.ones", "torch.empty", "torch.full", "torch.randn", "torch.rand",
    "torch.randint", "torch.randperm", "torch.arange", "torch.linspace", "torch.eye",
    "torch.zeros_like", "torch.ones_like", "torch.empty_like", "torch.full_like",
    "torch.randn_like", "torch.rand_like", "torch.tensor", "torch.as_tensor", "numpy.zeros",
    "numpy.ones", "numpy.empty", "numpy.full", "numpy.arange", "numpy.array", "numpy.asarray",
    "numpy.random.randint", "numpy.random.rand", "numpy.random.randn",
}
COPY_CALLS = {"torch.tensor", "torch.as_tensor", "numpy.array", "numpy.asarray"}
PARAMETER_CALLS = {"torch.nn.Parameter", "torch.nn.parameter.Parameter"}
OPTIMIZER_PREFIX = "torch.optim."
NOT_OPTIMIZERS = ("torch.optim.lr_scheduler", "torch.optim.swa_utils")
AUTOGRAD_GRAD = {"torch.autograd.grad"}


# Calls that read values only for their size, shape or type: they carry no data.
SIZE_CALLS = {"len", "isinstance", "type", "id", "callable", "hasattr"}
SIZE_METHODS = {"numel", "size", "dim", "nelement", "element_size", "stride", "is_contiguous",
                "get_device"}
SIZE_ATTRS = {"shape", "ndim", "dtype", "device", "is_cuda", "requires_grad", "itemsize", "nbytes"}

# Reductions: a statistic of the data, not the data (a sum of NLLs, a Hessian).
REDUCE_METHODS = {"sum", "mean", "std", "var", "norm", "item", "prod", "count_nonzero", "tolist"}
REDUCE_CALLS = {"sum", "float", "int", "torch.sum", "torch.mean", "numpy.sum", "numpy.mean",
                "math.fsum"}

# Methods that write their arguments into the object they are called on.
MUTATORS = {
    "append", "extend", "insert", "add_", "sub_", "mul_", "div_", "copy_", "index_add_",
    "index_copy_", "index_put_", "index_fill_", "scatter_", "scatter_add_", "scatter_reduce_",
    "put_", "masked_scatter_", "update", "setdefault", "fill_", "addmm_", "addcmul_", "lerp_",
}
MUTATE_CALLS = {"numpy.add.at": 0, "numpy.put": 0, "numpy.copyto": 0, "torch.index_put_": 0}

HASH_CALLS = {"hash", "numpy.bitwise_xor", "torch.bitwise_xor", "torch.remainder", "numpy.mod",
              "numpy.remainder", "numpy.bitwise_and", "torch.bitwise_and", "torch.fmod"}
SELECT_CALLS = {"min", "max", "torch.minimum", "torch.maximum", "torch.min", "torch.max",
                "numpy.minimum", "numpy.maximum", "numpy.min", "numpy.max", "torch.fmin",
                "torch.fmax", "numpy.fmin", "numpy.fmax", "torch.amin", "torch.amax", "numpy.amin",
                "numpy.amax", "torch.argmin", "torch.argmax", "numpy.argmin", "numpy.argmax"}
SELECT_METHODS = {"min", "max", "amin", "amax", "minimum", "maximum", "fmin", "fmax", "argmin", "argmax"}
# Of those, the ones that reduce over an axis (an integer argument is the axis, not an operand);
# the others compare their operands element by element.
AXIS_SELECT_CALLS = {"torch.min", "torch.max", "numpy.min", "numpy.max", "torch.amin", "torch.amax",
                     "numpy.amin", "numpy.amax", "torch.argmin", "torch.argmax", "numpy.argmin", "numpy.argmax"}
AXIS_SELECT_METHODS = {"min", "max", "amin", "amax", "argmin", "argmax"}
WHERE_CALLS = {"torch.where", "numpy.where"}
# Repeat each element a given number of times (a token's value over its bytes).
SPREAD_CALLS = {"numpy.repeat", "torch.repeat_interleave"}
SPREAD_METHODS = {"repeat_interleave"}

# Tokenizer calls that turn a token id into its text or bytes.
PIECE_METHODS = {"id_to_piece", "IdToPiece", "decode", "decode_ids", "DecodeIds",
                 "convert_ids_to_tokens", "decode_pieces", "DecodePieces"}
BYTE_METHODS = {"encode"}

# comparisons spelled as calls (`ids.ne(sep)`, `torch.eq(ids, sep)`): masks, as `==` and `!=` are
EQUALITY_METHODS = {"eq", "ne", "not_equal"}
EQUALITY_CALLS = {"torch.eq", "torch.ne", "torch.not_equal", "numpy.equal", "numpy.not_equal"}
# torch containers of modules: a call of one runs the modules it holds
MODULE_CONTAINERS = {"torch.nn.ModuleList", "torch.nn.Sequential", "torch.nn.ModuleDict"}
HOOK_METHODS = {"register_forward_hook", "register_forward_pre_hook"}
ENV_READS = {"os.environ.get", "os.getenv"}

SERIALIZE_CALLS = {
    "torch.save", "pickle.dump", "pickle.dumps", "numpy.save", "numpy.savez",
    "numpy.savez_compressed", "lzma.compress", "zlib.compress", "bz2.compress", "brotli.compress",
    "zstandard.compress", "zstd.compress", "safetensors.torch.save_file", "safetensors.torch.save",
}
SERIALIZE_METHODS = {"register_buffer": 1}
# Reading a compressed blob back (the artifact's payloads).
DECOMPRESS_CALLS = {"lzma.decompress", "zlib.decompress", "bz2.decompress", "gzip.decompress",
                    "brotli.decompress", "zstandard.decompress", "zstd.decompress"}

# Reading weights back from a file or bytes (the artifact's state dict).
DESERIALIZE_CALLS = {"torch.load", "pickle.load", "pickle.loads", "safetensors.torch.load_file",
                     "safetensors.torch.load"}

# Reading arrays from a file: a shipped table (bytes per token) the run may score with.
ARRAY_LOAD_CALLS = {"numpy.load"}

NETWORK_CALLS = {
    "urllib.request.urlopen", "urllib.request.urlretrieve", "urllib.request.Request",
    "urllib.urlopen", "requests.get", "requests.post", "requests.put", "requests.request",
    "requests.Session", "http.client.HTTPConnection", "http.client.HTTPSConnection",
    "socket.socket", "socket.create_connection", "huggingface_hub.hf_hub_download",
    "huggingface_hub.snapshot_download", "huggingface_hub.HfApi", "datasets.load_dataset",
    "torch.hub.load", "torch.hub.load_state_dict_from_url", "torch.hub.download_url_to_file",
    "wget.download", "httpx.get", "httpx.post", "httpx.Client", "aiohttp.ClientSession",
    "ftplib.FTP",
}
SHELL_CALLS = {"subprocess.run", "subprocess.call", "subprocess.check_call",
               "subprocess.check_output", "subprocess.Popen", "os.system", "os.popen"}
NETWORK_WORDS = ("curl ", "curl\"", "wget", "http://", "https://", "git clone", "pip install",
                 "huggingface-cli", "hf download")


def is_optimizer(qualified: str) -> bool:
    if not qualified.startswith(OPTIMIZER_PREFIX) or qualified.startswith(NOT_OPTIMIZERS):
        return False
    last = qualified.rsplit(".", 1)[-1]
    return last[:1].isupper() and last != "Optimizer"


def interpreted(name: str) -> bool:
    """A library function the analysis gives a meaning to (a dotted name in one of the tables)."""
    return "." in name and any(name in table for table in (
        LOSS_CALLS, PROB_CALLS, GATHER_CALLS, MODULE_LOADERS, SAMPLE_CALLS, CREATE_CALLS,
        COPY_CALLS, REDUCE_CALLS, MUTATE_CALLS, HASH_CALLS, SELECT_CALLS, WHERE_CALLS, SPREAD_CALLS,
        ENV_READS, SERIALIZE_CALLS, DECOMPRESS_CALLS, ARRAY_LOAD_CALLS, NETWORK_CALLS, SHELL_CALLS,
        EQUALITY_CALLS, RANDOM_CALLS, PERMUTATION_CALLS, GENERATOR_CALLS, SHUFFLE_CALLS))
