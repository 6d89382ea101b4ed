"""Her face: 14 expressions as data, the characters, the painter and its layers, the
animated widget and offscreen pictures. Qt only; uses nothing else of ui/."""
