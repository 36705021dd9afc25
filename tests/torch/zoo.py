"""zoo - the architectures people compile, at tiny sizes, built from their libraries' code
with random weights (no downloads): torchvision, timm, transformers and diffusers, pinned in
scripts/requirements-torch.txt.

Each entry: build() -> (model, example inputs), and the dotted path of a mid-network module
whose weight the defect run scales (some rows by 1.01). BatchNorm statistics are set from a
few random batches in train mode (zoo_model), so activations keep a realistic scale instead
of the identity statistics of a fresh model.

Used by tests/torch/test_zoo.py (the checks, and the README's table) and nothing else.
"""
import copy

import torch

# Entries CI runs (tests/CMakeLists.txt: zoo_torch_current); PARITY_ZOO=all runs them all.
CI_SUBSET = ("bert", "llama_gqa", "resnet18")


def _tokens(vocab, shape=(2, 12)):
    return (torch.randint(0, vocab, shape),)


def _image(c=3, hw=32, n=2):
    return (torch.randn(n, c, hw, hw),)


def bert():
    from transformers import BertConfig, BertModel
    cfg = BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, vocab_size=100, max_position_embeddings=64)
    return BertModel(cfg), _tokens(100)


def gpt2():
    from transformers import GPT2Config, GPT2Model
    cfg = GPT2Config(n_embd=32, n_layer=2, n_head=2, vocab_size=100, n_positions=64)
    return GPT2Model(cfg), _tokens(100)


def llama_gqa():
    """Llama with grouped-query attention: 4 query heads over 2 k/v heads."""
    from transformers import LlamaConfig, LlamaModel
    cfg = LlamaConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, intermediate_size=128, vocab_size=100,
                      max_position_embeddings=64)
    return LlamaModel(cfg), _tokens(100)


def t5_encoder():
    from transformers import T5Config, T5EncoderModel
    cfg = T5Config(d_model=32, d_kv=16, d_ff=64, num_layers=2, num_heads=2, vocab_size=100)
    return T5EncoderModel(cfg), _tokens(100)


def hf_vit():
    from transformers import ViTConfig, ViTModel
    cfg = ViTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                    intermediate_size=64, image_size=32, patch_size=8)
    return ViTModel(cfg), _image()


def resnet18():
    import torchvision
    return torchvision.models.resnet18(num_classes=10), _image()


def mobilenet_v3_small():
    import torchvision
    return torchvision.models.mobilenet_v3_small(num_classes=10), _image()


def efficientnet_b0():
    import torchvision
    return torchvision.models.efficientnet_b0(num_classes=10), _image()


def convnext_tiny():
    import torchvision
    return torchvision.models.convnext_tiny(num_classes=10), _image()


def tv_vit():
    import torchvision
    m = torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2,
                                             num_heads=2, hidden_dim=32, mlp_dim=64,
                                             num_classes=10)
    return m, _image()


def swin_t():
    import torchvision
    return torchvision.models.swin_t(num_classes=10), _image(hw=64)


def timm_vit_tiny():
    import timm
    return timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=32,
                             patch_size=8, depth=2, num_classes=10), _image()


def timm_regnetx_002():
    import timm
    return timm.create_model("regnetx_002", pretrained=False, num_classes=10), _image()


def timm_levit_128s():
    import timm
    return timm.create_model("levit_128s", pretrained=False, num_classes=10,
                             img_size=64), _image(hw=64)


def timm_mobilevitv2_050():
    import timm
    return timm.create_model("mobilevitv2_050", pretrained=False, num_classes=10), \
        _image(hw=64)


def unet2d():
    from diffusers import UNet2DModel
    m = UNet2DModel(sample_size=16, in_channels=3, out_channels=3, layers_per_block=1,
                    block_out_channels=(32, 64), norm_num_groups=8,
                    down_block_types=("DownBlock2D", "AttnDownBlock2D"),
                    up_block_types=("AttnUpBlock2D", "UpBlock2D"))
    return m, (torch.randn(2, 3, 16, 16), torch.tensor([10, 500]))


# name -> (builder, the module the defect run edits)
ZOO = {
    "bert": (bert, "encoder.layer.1.intermediate.dense"),
    "gpt2": (gpt2, "h.1.mlp.c_fc"),
    "llama_gqa": (llama_gqa, "layers.1.mlp.up_proj"),
    "t5_encoder": (t5_encoder, "encoder.block.1.layer.1.DenseReluDense.wi"),
    "hf_vit": (hf_vit, "layers.1.mlp.fc1"),
    "resnet18": (resnet18, "layer3.0.conv1"),
    "mobilenet_v3_small": (mobilenet_v3_small, "features.6.block.0.0"),
    "efficientnet_b0": (efficientnet_b0, "features.4.0.block.0.0"),
    "convnext_tiny": (convnext_tiny, "features.5.1.block.0"),
    "tv_vit": (tv_vit, "encoder.layers.encoder_layer_1.mlp.0"),
    "swin_t": (swin_t, "features.5.1.mlp.0"),
    "timm_vit_tiny": (timm_vit_tiny, "blocks.1.mlp.fc1"),
    "timm_regnetx_002": (timm_regnetx_002, "s3.b1.conv1.conv"),
    "timm_levit_128s": (timm_levit_128s, "stages.1.blocks.1.mlp.ln1.linear"),
    "timm_mobilevitv2_050": (timm_mobilevitv2_050, "stages.3.1.conv_kxk.conv"),
    "unet2d": (unet2d, "down_blocks.1.resnets.0.conv1"),
}


def _settle_batch_norm(model, inputs, batches=4):
    """BatchNorm running statistics from a few random batches like the example (train
    mode, no grad), so eval-mode activations have the scale of a trained network."""
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not bns or not isinstance(inputs[0], torch.Tensor) or not inputs[0].is_floating_point():
        return
    for m in bns:
        m.reset_running_stats()
        m.momentum = None          # a plain average over the batches
    model.train()
    with torch.no_grad():
        for _ in range(batches):
            model(torch.randn_like(inputs[0]), *inputs[1:])
    model.eval()


def zoo_model(name, seed=0):
    """(model in eval mode, example inputs, defect module path) for a zoo entry."""
    torch.manual_seed(seed)
    build, defect = ZOO[name]
    model, inputs = build()
    _settle_batch_norm(model, inputs)
    return model.eval(), inputs, defect


def with_defect(model, path, scale=1.01, rows=slice(0, 2)):
    """A copy of model whose module at path has rows (output channels) of its weight
    scaled: the injected bug of the defect runs, as a miscompiled kernel would give."""
    bad = copy.deepcopy(model)
    weight = bad.get_submodule(path).weight
    with torch.no_grad():
        # GPT-2's Conv1D keeps its weight as [in, out]: scale its columns
        if type(bad.get_submodule(path)).__name__ == "Conv1D":
            weight[:, rows] *= scale
        else:
            weight[rows] *= scale
    return bad
