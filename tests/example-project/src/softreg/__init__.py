"""softreg: a softmax-regression layer whose backward pass is written by hand."""
from .model import SoftmaxRegression as SoftmaxRegression
from .model import softmax as softmax
from .model import softmax_vjp as softmax_vjp
