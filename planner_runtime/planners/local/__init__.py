"""The local planner: a transformers model on this machine, decoded under the tool-call grammar,
one chat at a time or many batched.

:mod:`model_store` provisions the files and :mod:`model` loads and places the model;
:mod:`decoding` is the decoding API both paths use (encode a chat, the grammar matcher from
:mod:`grammar`, the sampler, the answer and its token record); :mod:`planner` decodes one chat
with the prompt KV it keeps per conversation (:mod:`prefix_cache`, over :mod:`kv_cache`'s
growing buffers); :mod:`batch` decodes many at once over a radix tree of prompt KV
(:mod:`prefix_tree`) that packed rows attend without copies (:mod:`attention`). :mod:`threads`
and :mod:`heap` tune the process for the CPU. Importing this package loads nothing heavy.
"""
