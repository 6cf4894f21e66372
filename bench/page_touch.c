// How long a read of one 4 KiB page takes after the memory has been idle (docs/benchmarks.md,
// "Cold memory and row-group selection", session 15). Writes 1 GiB, then every WAIT seconds reads
// 2,000 random pages once each and prints the mean time per page.
// Build and run: gcc -O2 -o /tmp/page_touch bench/page_touch.c && /tmp/page_touch 30
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <string.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
int main(int c,char**v){
  size_t n=(size_t)1<<30; int waits=atoi(v[1]);
  char*p=malloc(n); memset(p,1,n);
  volatile long s=0; unsigned r=12345;
  for(int w=0;w<6;w++){
    if(w) sleep(waits);
    // touch 2000 random distinct pages once each
    double t0=now();
    for(int i=0;i<2000;i++){ r=r*1103515245+12345; size_t off=((size_t)(r%(n/4096)))*4096+ (w*64)%4096; s+=p[off];}
    double t1=now();
    printf("after %ds: %.0f ns per random page touch\n", w*waits, (t1-t0)/2000);
    fflush(stdout);
  }
}
