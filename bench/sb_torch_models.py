"""scalebench's models in PyTorch, module for module (src/models/*.cpp): one twin per model of
scalebench's registry (TWINS). The names, input shapes and parameter counts come from the binary
(`scalebench info --models`, bench/scalebench_models.py); tests/e2e/test_model_listing.py checks that
every model it lists has a twin here.

The state_dict names are scalebench's ParamSpec names ("conv1.weight", "stem.bn.running_mean",
"block1.shortcut.bias", ...), so weights dumped by tests/reference/dump_initial_weights load by name.
Used by bench/pytorch_reference.py (timing) and tests/reference/make_fixtures.py (the oracle).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

WRN_WIDTHS = (16, 160, 320, 640)


class Twin(nn.Module):
    """A model's twin: for_input builds it for an input shape, class count, WRN widths and dropout on/off."""
    LOG_PROBABILITIES = False  # True: ends in log-softmax (NLL loss); False: logits (cross-entropy)

    @classmethod
    def for_input(cls, channels, height, width, classes, widths, dropout):
        return cls(channels, height, width, classes)


class MnistCnn(Twin):
    """The PyTorch examples' MNIST Net (src/models/mnist_cnn.cpp). Ends in log-softmax (train with NLL)."""
    LOG_PROBABILITIES = True

    def __init__(self, channels=1, height=28, width=28, classes=10, dropout=(0.25, 0.5)):
        super().__init__()
        h, w = (height - 4) // 2, (width - 4) // 2   # two unpadded 3x3 convs, then a 2x2 max-pool
        self.conv1 = nn.Conv2d(channels, 32, 3, 1, bias=True)
        self.conv2 = nn.Conv2d(32, 64, 3, 1, bias=True)
        self.dropout1 = nn.Dropout(dropout[0])
        self.fc1 = nn.Linear(64 * h * w, 128, bias=True)
        self.dropout2 = nn.Dropout(dropout[1])
        self.fc2 = nn.Linear(128, classes, bias=True)

    @classmethod
    def for_input(cls, channels, height, width, classes, widths, dropout):
        return cls(channels, height, width, classes, (0.25, 0.5) if dropout else (0.0, 0.0))

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


class WideResNet(Twin):
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

    @classmethod
    def for_input(cls, channels, height, width, classes, widths, dropout):
        return cls(channels, classes, tuple(widths), 0.01 if dropout else 0.0)

    def forward(self, x):
        x = self.stem(x)
        x = self.block2(self.block1(x))
        x = F.max_pool2d(x, 2)
        x = self.block4(self.block3(x))
        x = F.max_pool2d(x, 2)
        x = self.block6(self.block5(x))
        x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)
        return self.fc(x)


class CifarCnn(Twin):
    """The PyTorch CIFAR-10 tutorial Net (src/models/cifar_cnn.cpp). Ends in logits."""

    def __init__(self, channels=3, height=32, width=32, classes=10):
        super().__init__()
        h, w = ((height - 4) // 2 - 4) // 2, ((width - 4) // 2 - 4) // 2   # two unpadded 5x5 convs, each pooled
        self.conv1 = nn.Conv2d(channels, 6, 5, 1, bias=True)
        self.conv2 = nn.Conv2d(6, 16, 5, 1, bias=True)
        self.fc1 = nn.Linear(16 * h * w, 120, bias=True)
        self.fc2 = nn.Linear(120, 84, bias=True)
        self.fc3 = nn.Linear(84, classes, bias=True)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class Mlp(Twin):
    """src/models/mlp.cpp: flatten, fc 512, ReLU, fc 512, ReLU, fc classes. Ends in logits."""

    def __init__(self, channels=1, height=28, width=28, classes=10):
        super().__init__()
        self.fc1 = nn.Linear(channels * height * width, 512, bias=True)
        self.fc2 = nn.Linear(512, 512, bias=True)
        self.fc3 = nn.Linear(512, classes, bias=True)

    def forward(self, x):
        x = torch.flatten(x, 1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class BasicBlock(nn.Module):
    """ResNet's basic block: conv3x3-BN-ReLU, conv3x3-BN, plus the shortcut (1x1 conv + BN where the
    shape changes), then ReLU."""

    def __init__(self, channels_in, channels_out, stride):
        super().__init__()
        # Registration order = scalebench's parameter order: main branch first, then the shortcut.
        self.conv1 = nn.Conv2d(channels_in, channels_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels_out)
        self.conv2 = nn.Conv2d(channels_out, channels_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels_out)
        self.shortcut = None
        if stride != 1 or channels_in != channels_out:
            self.shortcut = nn.Sequential(nn.Conv2d(channels_in, channels_out, 1, stride, 0, bias=False),
                                          nn.BatchNorm2d(channels_out))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (self.shortcut(x) if self.shortcut is not None else x))


class ResNet18Cifar(Twin):
    """src/models/resnet18_cifar.cpp (resnet18-cifar): 3x3 stem without max-pool, [2,2,2,2] basic blocks of
    64/128/256/512 channels, global average pooling, fc. Ends in logits."""

    def __init__(self, channels=3, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, 64, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        widths, channels_in = (64, 128, 256, 512), 64
        for stage, width in enumerate(widths):
            stride = 1 if stage == 0 else 2
            setattr(self, f"layer{stage + 1}", nn.Sequential(BasicBlock(channels_in, width, stride),
                                                             BasicBlock(width, width, 1)))
            channels_in = width
        self.fc = nn.Linear(512, classes, bias=True)

    @classmethod
    def for_input(cls, channels, height, width, classes, widths, dropout):
        return cls(channels, classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)
        return self.fc(x)


class TorchvisionResNet(Twin):
    """src/models/resnet.cpp (resnet18, resnet34, resnet50): torchvision.models' own ResNets, untrained
    (weights=None). scalebench names its parameters as torchvision does ("layer1.0.downsample.0.weight").
    Ends in logits. torchvision is imported here only, so the other twins need just torch."""
    ARCHITECTURE = None  # the torchvision.models builder's name

    @classmethod
    def for_input(cls, channels, height, width, classes, widths, dropout):
        import torchvision
        model = getattr(torchvision.models, cls.ARCHITECTURE)(weights=None, num_classes=classes)
        if channels != 3:  # the stem for another channel count, as scalebench's builder sizes it
            model.conv1 = nn.Conv2d(channels, 64, 7, 2, 3, bias=False)
            nn.init.kaiming_normal_(model.conv1.weight, mode="fan_out", nonlinearity="relu")
        return model


class ResNet18(TorchvisionResNet):
    ARCHITECTURE = "resnet18"


class ResNet34(TorchvisionResNet):
    ARCHITECTURE = "resnet34"


class ResNet50(TorchvisionResNet):
    ARCHITECTURE = "resnet50"


# The twin of each model of scalebench's registry, by its name.
TWINS = {"mnist-cnn": MnistCnn, "wrn": WideResNet, "cifar-cnn": CifarCnn, "mlp": Mlp, "resnet18": ResNet18,
         "resnet34": ResNet34, "resnet50": ResNet50, "resnet18-cifar": ResNet18Cifar}


def build(model, channels, height, width, classes, widths=WRN_WIDTHS, dropout=True):
    """A model by scalebench's name. dropout=False sets every dropout probability to 0 (widths: wrn only)."""
    if model not in TWINS:
        raise ValueError(f"scalebench's model {model!r} has no PyTorch twin in bench/sb_torch_models.py; "
                         f"twins: {', '.join(TWINS)}")
    return TWINS[model].for_input(channels, height, width, classes, widths, dropout)


def outputs_log_probabilities(model):
    """Whether the twin ends in log-softmax (NLL loss) rather than logits (cross-entropy)."""
    return TWINS[model].LOG_PROBABILITIES


def loss_fn(model):
    return F.nll_loss if outputs_log_probabilities(model) else F.cross_entropy


def parameter_count(module):
    return sum(p.numel() for p in module.parameters())
