"""A real transformers model, GPT-2 with random weights from a tiny config
(no download), compiled with a graph break inside it: a forward hook on its
block calls torch._dynamo.graph_break(), so the generated code has a resume
function in the middle of the model's forward."""
import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
config = GPT2Config(n_layer=1, n_embd=16, n_head=2, n_positions=32, vocab_size=64,
                    bos_token_id=None, eos_token_id=None)
model = GPT2LMHeadModel(config).eval()


def break_after_block(module, args, output):
    torch._dynamo.graph_break()


model.transformer.h[0].register_forward_hook(break_after_block)


@torch.compile(backend="eager")
def logits(ids):
    return model(ids).logits


ids = torch.arange(8).reshape(1, 8) % config.vocab_size
with torch.no_grad():
    out = logits(ids)
print(tuple(out.shape), f"{out.sum().item():.4f}", out[0, -1].argmax().item())
