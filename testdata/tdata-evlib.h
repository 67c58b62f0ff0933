/* The interface between tdata-evlib and its library, libtdata-evlib.so. */
#ifndef STACKCAP_TDATA_EVLIB_H
#define STACKCAP_TDATA_EVLIB_H

/* Calls evlib_hit N times; each call passes the SDT marker tdata_lib:lib_tick once. */
void evlib_run(unsigned n);
void evlib_hit(unsigned i);

#endif
