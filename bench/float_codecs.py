#!/usr/bin/env python3
# Usage: python3 bench/float_codecs.py  (needs pyarrow, pcodec, pvlib, and the data sets bench/compression.py
# leaves in /var/tmp/tempora-compression). Prints a Markdown table row per column.
# Float columns that are not short decimals, from packages (not shaped by us): bytes/value of
# one-column Parquet zstd(3) files with PLAIN, BYTE_STREAM_SPLIT, dictionary; pco (pcodec,
# default level); and which representation Tempora's rules pick.
import pyarrow as pa, pyarrow.parquet as pq, numpy as np, io, glob, sys, pandas as pd
import pcodec
from pcodec import standalone
def short_decimal(v):
    for s in range(7):
        m=10.0**s; x=np.round(v*m)
        if np.all(x/m==v) and np.all(np.abs(x)<=9e15): return s
    return None
def psize(arr, **kw):
    t=pa.table({'c':arr}); b=io.BytesIO(); pq.write_table(t,b,compression='zstd',compression_level=3,**kw); return len(b.getvalue())
cols=[]
for f in sorted(glob.glob('/var/tmp/tempora-compression/*/*.parquet')):
    t=pq.read_table(f)
    for name in t.column_names:
        if pa.types.is_floating(t[name].type):
            cols.append((f.split('/')[-2], name, t[name].drop_null().to_numpy().astype(np.float64)))
import pvlib
tmy = pq.read_table('/var/tmp/tempora-compression/tmy3/tmy3.parquet').to_pandas()
times = pd.date_range('2020-01-01', periods=8760, freq='h', tz='UTC')
sp = pvlib.solarposition.get_solarposition(times, 33.45, -111.98)
for c in ['apparent_zenith','azimuth','equation_of_time']:
    cols.append(('pvlib solarpos', c, sp[c].to_numpy().astype(np.float64)))
try:
    from bokeh.sampledata.sea_surface_temperature import sea_surface_temperature as sst
    cols.append(('bokeh sst', 'temperature', sst['temperature'].to_numpy().astype(np.float64)))
except Exception as e:
    print('no sst', e, file=sys.stderr)
for ds,name,v in cols:
    n=len(v)
    if n<1000: continue
    sd=short_decimal(v)
    if sd is not None: continue
    f32=bool(np.all(v.astype(np.float32).astype(np.float64)==v))
    a=pa.array(v.astype(np.float32) if f32 else v)
    plain=psize(a,use_dictionary=False); bss=psize(a,use_dictionary=False,use_byte_stream_split=True); dic=psize(a,use_dictionary=True)
    pco=len(standalone.simple_compress(v, pcodec.ChunkConfig()))
    best=min(plain,bss,dic)
    print(f"| {ds} | {name} | {n:,} | {'f32' if f32 else 'f64'} | {plain/n:.3f} | {bss/n:.3f} | {dic/n:.3f} | {best/n:.3f} | {pco/n:.3f} | {best/pco:.2f} |")
