from kolo.torch._C import *
