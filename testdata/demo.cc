// SPDX-License-Identifier: MIT
// tdata-demo: the program quickstart.sh records, with a profile that reads
// at a glance: a made-up report job that loads, computes and writes, three
// to five levels deep, each leaf burning a fixed share of the run's CPU
// time.  C++ on purpose: its frames carry templates, operators and
// references ('<', '>', '&'), which a flamegraph must escape.
//
//   main -> demo::run_report
//     load_input      -> tokenize 10%, checksum<unsigned char> 5%
//     compute         -> Matrix<double>::multiply 30%, sort_records -> merge_runs 20%
//     write_output    -> Compressor::compress_block -> find_match 20%,
//                        BitWriter::operator<< 15%
//
// Usage: tdata-demo [SECONDS]   (thread CPU time, default 2)
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#define FRAME __attribute__((noipa))
#define KEEP() __asm__ volatile("" ::: "memory")
// CPU time of this thread in seconds: a macro, so it never shows as a frame.
#define CPU_NOW()                                                        \
	({                                                               \
		struct timespec ts_;                                     \
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts_);            \
		(double)ts_.tv_sec + (double)ts_.tv_nsec * 1e-9;         \
	})

namespace demo {

static volatile uint64_t sink;
static double budget;           // seconds of one round, all leaves together

struct Record {
	uint64_t key, value;
};

template <typename T> struct Matrix {
	T cell[16][16];
	FRAME void multiply(const Matrix<T> &a, const Matrix<T> &b);
};

template <typename T> void Matrix<T>::multiply(const Matrix<T> &a, const Matrix<T> &b)
{
	double const end = CPU_NOW() + 0.30 * budget;
	do {
		for (int i = 0; i < 16; i++)
			for (int j = 0; j < 16; j++) {
				T s = 0;
				for (int k = 0; k < 16; k++)
					s += a.cell[i][k] * b.cell[k][j];
				cell[i][j] = s;
			}
		KEEP();
	} while (CPU_NOW() < end);
}

class BitWriter {
public:
	uint64_t acc = 0;
	unsigned bits = 0;
	FRAME BitWriter &operator<<(unsigned v);
};

BitWriter &BitWriter::operator<<(unsigned v)
{
	double const end = CPU_NOW() + 0.15 * budget;
	do {
		for (unsigned i = 0; i < 100000; i++) {
			acc = (acc << 5) ^ (v + i) ^ (acc >> 59);
			bits += 5;
		}
		KEEP();
	} while (CPU_NOW() < end);
	sink = acc;
	return *this;
}

class Compressor {
public:
	FRAME unsigned find_match(const unsigned char *data, unsigned len);
	FRAME unsigned compress_block(const unsigned char *data, unsigned len);
};

unsigned Compressor::find_match(const unsigned char *data, unsigned len)
{
	double const end = CPU_NOW() + 0.20 * budget;
	unsigned best = 0;
	do {
		for (unsigned i = 1; i < len; i++)
			for (unsigned j = 0; j < i && j < 64; j++)
				if (data[i] == data[j] && i - j > best % 97)
					best = i - j;
		KEEP();
	} while (CPU_NOW() < end);
	return best;
}

unsigned Compressor::compress_block(const unsigned char *data, unsigned len)
{
	unsigned r = find_match(data, len);
	KEEP();
	return r + 1;
}

FRAME static unsigned tokenize(const char (&text)[256])
{
	double const end = CPU_NOW() + 0.10 * budget;
	unsigned tokens = 0;
	do {
		for (unsigned rep = 0; rep < 1000; rep++)
			for (unsigned i = 1; i < sizeof(text); i++)
				tokens += (text[i] == ' ') != (text[i - 1] == ' ');
		KEEP();
	} while (CPU_NOW() < end);
	return tokens;
}

template <typename T> FRAME static uint64_t checksum(const T *data, unsigned len)
{
	double const end = CPU_NOW() + 0.05 * budget;
	uint64_t h = 1469598103934665603ull;
	do {
		for (unsigned rep = 0; rep < 1000; rep++)
			for (unsigned i = 0; i < len; i++)
				h = (h ^ data[i]) * 1099511628211ull;
		KEEP();
	} while (CPU_NOW() < end);
	return h;
}

FRAME static void merge_runs(Record *r, Record *tmp, unsigned n)
{
	double const end = CPU_NOW() + 0.20 * budget;
	do {
		for (unsigned width = 1; width < n; width *= 2)
			for (unsigned lo = 0; lo < n; lo += 2 * width) {
				unsigned mid = lo + width < n ? lo + width : n;
				unsigned hi = lo + 2 * width < n ? lo + 2 * width : n;
				unsigned a = lo, b = mid, k = lo;
				while (a < mid && b < hi)
					tmp[k++] = r[a].key <= r[b].key ? r[a++] : r[b++];
				while (a < mid)
					tmp[k++] = r[a++];
				while (b < hi)
					tmp[k++] = r[b++];
				for (k = lo; k < hi; k++)
					r[k] = tmp[k];
			}
		for (unsigned i = 0; i < n; i++)
			r[i].key = r[i].key * 6364136223846793005ull + 1442695040888963407ull;
		KEEP();
	} while (CPU_NOW() < end);
}

FRAME static void sort_records(Record (&records)[512])
{
	static Record tmp[512];
	merge_runs(records, tmp, 512);
	KEEP();
}

FRAME static void load_input(char (&text)[256])
{
	unsigned t = tokenize(text);
	uint64_t h = checksum<unsigned char>(reinterpret_cast<const unsigned char *>(text), sizeof(text));
	sink = t ^ h;
	KEEP();
}

FRAME static void compute(Matrix<double> &m, Record (&records)[512])
{
	static Matrix<double> a, b;
	m.multiply(a, b);
	sort_records(records);
	KEEP();
}

FRAME static void write_output(const char (&text)[256])
{
	Compressor c;
	BitWriter w;
	unsigned r = c.compress_block(reinterpret_cast<const unsigned char *>(text), sizeof(text));
	w << r;
	KEEP();
}

FRAME static void run_report(double seconds)
{
	static char text[256];
	static Matrix<double> m;
	static Record records[512];
	for (unsigned i = 0; i < sizeof(text); i++)
		text[i] = (i * 7 % 11) < 2 ? ' ' : (char)('a' + i % 26);
	for (unsigned i = 0; i < 512; i++)
		records[i] = Record{ i * 2654435761u % 1000, i };
	// Ten rounds: each leaf's share is spread over the run.
	budget = seconds / 10;
	for (int round = 0; round < 10; round++) {
		load_input(text);
		compute(m, records);
		write_output(text);
	}
	KEEP();
}

} // namespace demo

int main(int argc, char **argv)
{
	double seconds = 2.0;
	if (argc > 2 || (argc == 2 && (seconds = std::atof(argv[1])) <= 0)) {
		std::fprintf(stderr, "usage: %s [SECONDS]\n", argv[0]);
		return 2;
	}
	demo::run_report(seconds);
	return 0;
}
