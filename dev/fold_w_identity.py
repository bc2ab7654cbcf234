#!/usr/bin/env python3
# Checks the identity behind notes/hopper.md §22's lead for the 5x10 stride-2 speech layers (exact, on small integers). Usage: python3 dev/fold_w_identity.py
# The W fold: an NHWC conv with stride_w 2, S even, pad_w 0, dil 1 on C channels equals a conv
# with stride_w 1, S/2 taps, 2C channels on the same bytes read with row pitch W*C (W odd: the
# last column is never read), and the KRSC filter's same bytes as K x R x S/2 x 2C.
import numpy as np
from numpy.lib.stride_tricks import as_strided
rng=np.random.default_rng(1)
def conv_nhwc(x,w,sh,sw):
    N,H,W,C=x.shape; K,R,S,_=w.shape
    P=(H-R)//sh+1; Q=(W-S)//sw+1
    y=np.zeros((N,P,Q,K))
    for r in range(R):
        for s in range(S):
            patch=x[:, r:r+sh*(P-1)+1:sh, s:s+sw*(Q-1)+1:sw, :]
            y+=np.einsum('npqc,kc->npqk',patch,w[:,r,s,:])
    return y
for (N,C,H,W,K,R,S) in [(2,32,9,21,5,3,10),(1,16,7,20,3,5,4),(3,8,11,15,4,2,6)]:
    x=rng.integers(-3,4,(N,H,W,C)).astype(np.float64); w=rng.integers(-3,4,(K,R,S,C)).astype(np.float64)
    y=conv_nhwc(x,w,2,2)
    Wf=W//2; it=x.itemsize
    xf=as_strided(x,shape=(N,H,Wf,2*C),strides=(H*W*C*it,W*C*it,2*C*it,it))
    wf=w.reshape(K,R,S//2,2*C)
    yf=conv_nhwc(xf,wf,2,1)
    assert y.shape==yf.shape and np.array_equal(y,yf), (N,C,H,W)
    print("ok", (N,C,H,W,K,R,S), y.shape)
