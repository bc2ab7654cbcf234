# Dev: a bank model of the NCHW stagings in kernels-gpu/src/tensor_core/hopper/epilogue.rs
# (8-byte accesses by half-warps, 16-byte by quarter-warps): wavefronts a warp access for each
# staging swizzle and read-back, and a search over the swizzles linear in the row bits.
def wf(addrs, width):
    # addrs: list of byte addresses per lane (32). width bytes per lane.
    group = {4:32, 8:16, 16:8}[width]
    total=0
    for g in range(0,32,group):
        banks={}
        for a in addrs[g:g+group]:
            for w in range(width//4):
                word=(a//4)+w
                banks.setdefault(word%32,set()).add(word)
        total+=max(len(v) for v in banks.values())
    return total
old_n=lambda r,u: r*128+(u^(r%8))*16
# staged_unit's swizzle (bits 0-2 of the row flip units by 3, 4, 2; keyed by bit 3 too, by 5,
# the best below, it spilled on the 128-accumulator tiles)
new_n=lambda r,u: r*128+(u^((3*(r&1))^(2*(r&2))^((r>>1)&2)))*16
old_w=lambda r,u: r*128+(u^((r^(r>>3))%8))*16
new_w=lambda r,u: r*128+(u^(((r&3)<<1)^((r>>3)&7)))*16
def stage(unit, rbase=0):
    tot=0
    for t in range(4):
        for e in range(2):
            ad=[unit(rbase+l//4+8*e, 2*t+(l%4)//2)+(l%4%2)*8 for l in range(32)]
            tot+=wf(ad,8)
    return tot/8
def narrow_read(unit):
    tot=0;n=0
    for k in range(2):
        for i in range(8):
            ad=[]
            for l in range(32):
                v=l//2+16*k; half=l%2
                ad.append(unit(8*half+i, v//4)+(v%4)*4)
            tot+=wf(ad,4); n+=1
    return tot/n
def fused_read(unit):
    tot=0;n=0
    for base in range(0,64,32):
        for hi in range(2):
            ad=[]
            for l in range(32):
                item=base+l; r,v=item//4,item%4
                ad.append(unit(r,2*v+hi))
            tot+=wf(ad,16); n+=1
    return tot/n
def wide_read(unit):
    tot=0;n=0
    for w in range(4):
        for k in range(2):
            for i in range(8):
                ad=[]
                for l in range(32):
                    t=32*w+l; r0=8*(t%8); v=t//8+16*k
                    ad.append(unit(r0+i, v//4)+(v%4)*4)
                tot+=wf(ad,4); n+=1
    return tot/n
def runs_read(unit,W):
    lanes=16//W; tot=0;n=0
    for i in range(32//(2*W)):
        for t in range(W):
            ad=[]
            for l in range(32):
                g,s=l%lanes,l//lanes
                v=2*W*i+s
                ad.append(unit(W*g+t, v//4)+(v%4)*4)
            tot+=wf(ad,4); n+=1
    return tot/n
for name,f in [('old_n',old_n),('new_n',new_n)]:
    print(name,'stage',stage(f),'narrow',narrow_read(f),'fused',fused_read(f),'runs4/2/1',runs_read(f,4),runs_read(f,2),runs_read(f,1))
for name,f in [('old_w',old_w),('new_w',new_w)]:
    print(name,'stage',sum(stage(f,16*w) for w in range(4))/4,'wide',wide_read(f))
# Every swizzle linear in the row's 4 bits, best first.
best=[]
for m in range(4096):
    cols=[(m>>(3*b))&7 for b in range(4)]
    def f(r,cols=cols):
        x=0
        for b in range(4):
            if (r>>b)&1: x^=cols[b]
        return x
    unit=lambda r,u,f=f: r*128+(u^f(r))*16
    sc=(stage(unit),narrow_read(unit),fused_read(unit),runs_read(unit,4),runs_read(unit,2),runs_read(unit,1))
    best.append((sum(sc),sc,cols))
best.sort()
for b in best[:5]: print(b)
