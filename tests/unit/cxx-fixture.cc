// SPDX-License-Identifier: MIT
// A small C++ program for the symbolizer tests: a method and an inlined
// function template, whose names must come out demangled.
#include <cstdio>
#include <cstdlib>

namespace shape {

struct Circle {
	double r;
	__attribute__((noinline)) double area(double scale);
};

double Circle::area(double scale)
{
	volatile double x = r * r * 3.14159;
	return x * scale;
}

template <typename T> static inline __attribute__((always_inline)) T twice(T v)
{
	volatile T x = v;
	return x + x;
}

__attribute__((noinline)) int total(int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += twice<int>(i);
	return s;
}

} // namespace shape

int main(int argc, char **argv)
{
	shape::Circle c{argc > 1 ? std::atof(argv[1]) : 1.0};
	std::printf("%g %d\n", c.area(2.0), shape::total(argc + 3));
	return 0;
}
