"""scalebench's models in PyTorch, module for module (src/models/*.cpp).

The state_dict names are scalebench's ParamSpec names ("conv1.weight", "stem.bn.running_mean",
"block1.shortcut.bias", ...), so weights dumped by tests/reference/dump_initial_weights load by name.
Used by bench/pytorch_reference.py (timing) and tests/reference/make_fixtures.py (the oracle).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

MNIST_CNN_PARAMS = 1_199_882   # 1x28x28, 10 classes (README.md)
WRN_PARAMS = 17_175_444        # 3x32x32, 100 classes, widths 16/160/320/640
WRN_WIDTHS = (16, 160, 320, 640)


class MnistCnn(nn.Module):
    """The PyTorch examples' MNIST Net (src/models/mnist_cnn.cpp). Ends in log-softmax (train with NLL)."""

    def __init__(self, channels=1, height=28, width=28, classes=10, dropout=(0.25, 0.5)):
        super().__init__()
        h, w = (height - 4) // 2, (width - 4) // 2   # two unpadded 3x3 convs, then a 2x2 max-pool
        self.conv1 = nn.Conv2d(channels, 32, 3, 1, bias=True)
        self.conv2 = nn.Conv2d(32, 64, 3, 1, bias=True)
        self.dropout1 = nn.Dropout(dropout[0])
        self.fc1 = nn.Linear(64 * h * w, 128, bias=True)
        self.dropout2 = nn.Dropout(dropout[1])
        self.fc2 = nn.Linear(128, classes, bias=True)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x)
        return F.log_softmax(self.fc2(x), dim=1)


class Stem(nn.Module):
    def __init__(self, channels_in, channels_out):
        super().__init__()
        self.conv = nn.Conv2d(channels_in, channels_out, 3, 1, 1, bias=False)
        self.bn = nn.BatchNorm2d(channels_out)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


class WideBlock(nn.Module):
    """conv3x3-BN-ReLU, dropout, conv3x3-BN-ReLU, plus the shortcut; no ReLU after the add.
    The shortcut is a 1x1 conv with bias when the width changes, the identity otherwise."""

    def __init__(self, channels_in, channels_out, dropout_p):
        super().__init__()
        # Registration order = scalebench's parameter order: main branch first, then the shortcut.
        self.conv1 = nn.Conv2d(channels_in, channels_out, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels_out)
        self.dropout = nn.Dropout(dropout_p)
        self.conv2 = nn.Conv2d(channels_out, channels_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels_out)
        self.shortcut = nn.Conv2d(channels_in, channels_out, 1, 1, 0, bias=True) if channels_in != channels_out else None

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.dropout(y)
        y = F.relu(self.bn2(self.conv2(y)))
        return y + (self.shortcut(x) if self.shortcut is not None else x)


class WideResNet(nn.Module):
    """src/models/wide_resnet.cpp: global average pooling before the classifier. Ends in logits
    (train with cross-entropy)."""

    def __init__(self, channels=3, classes=100, widths=WRN_WIDTHS, dropout_p=0.01):
        super().__init__()
        c0, c1, c2, c3 = widths
        self.stem = Stem(channels, c0)
        self.block1 = WideBlock(c0, c1, dropout_p)
        self.block2 = WideBlock(c1, c1, dropout_p)
        self.block3 = WideBlock(c1, c2, dropout_p)
        self.block4 = WideBlock(c2, c2, dropout_p)
        self.block5 = WideBlock(c2, c3, dropout_p)
        self.block6 = WideBlock(c3, c3, dropout_p)
        self.fc = nn.Linear(c3, classes, bias=True)

    def forward(self, x):
        x = self.stem(x)
        x = self.block2(self.block1(x))
        x = F.max_pool2d(x, 2)
        x = self.block4(self.block3(x))
        x = F.max_pool2d(x, 2)
        x = self.block6(self.block5(x))
        x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)
        return self.fc(x)


def build(model, channels, height, width, classes, widths=WRN_WIDTHS, dropout=True):
    """A model by scalebench's name. dropout=False sets every dropout probability to 0."""
    if model == "mnist-cnn":
        return MnistCnn(channels, height, width, classes, (0.25, 0.5) if dropout else (0.0, 0.0))
    if model == "wrn":
        return WideResNet(channels, classes, tuple(widths), 0.01 if dropout else 0.0)
    raise ValueError(f"unknown model {model!r}: use mnist-cnn or wrn")


def outputs_log_probabilities(model):
    """mnist-cnn ends in log-softmax (NLL loss); wrn ends in logits (cross-entropy)."""
    return model == "mnist-cnn"


def loss_fn(model):
    return F.nll_loss if outputs_log_probabilities(model) else F.cross_entropy


def parameter_count(module):
    return sum(p.numel() for p in module.parameters())
