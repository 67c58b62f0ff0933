# symbolize/: module + ELF address -> functions (inline chain), file:line.
