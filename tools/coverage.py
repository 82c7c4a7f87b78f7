import torch, tdx, sys, inspect
def pub(mod):
    return sorted(n for n in dir(mod) if not n.startswith('_') and callable(getattr(mod, n)) and not inspect.ismodule(getattr(mod,n)))
import tdx.linalg, tdx.fft, tdx.special, tdx.autograd, tdx.optim
for tn, xn in [("torch","tdx"),("torch.Tensor","tdx.Tensor"),("torch.linalg","tdx.linalg"),("torch.fft","tdx.fft"),("torch.special","tdx.special"),("torch.optim","tdx.optim"),("torch.autograd","tdx.autograd")]:
    t = eval(tn); x = eval(xn)
    names = pub(t)
    miss = [n for n in names if not hasattr(x, n)]
    print(tn, len(names)-len(miss), "of", len(names), "%.1f%%" % (100*(len(names)-len(miss))/len(names)))
    if len(sys.argv)>1 and sys.argv[1]==tn: print(" ".join(miss))
