"""Shaping stages and the post-processing chain that ends in the advantage estimator.

``PostProcessor.compile(route_shaping, post_process)`` checks every stage (custom stages are
imported and signature-checked) and reports all problems at once; calling the processor runs
route shaping, global shaping and the estimator on one batch. See :mod:`.processor`.
"""

from rewardrouter.shape.batch import MissingInputError, ShapeBatch
from rewardrouter.shape.builtin import BUILTIN_STAGES
from rewardrouter.shape.chain import CompiledStage, compile_stage, run_stages
from rewardrouter.shape.processor import (
    PostProcessor,
    PostProcessResult,
    ProcessedTensors,
    compile_post_process,
)

__all__ = [
    "BUILTIN_STAGES",
    "CompiledStage",
    "MissingInputError",
    "PostProcessResult",
    "PostProcessor",
    "ProcessedTensors",
    "ShapeBatch",
    "compile_post_process",
    "compile_stage",
    "run_stages",
]
