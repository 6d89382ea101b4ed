"""Her face: 14 expressions as data, the characters, the head and whole-frame painters, the
layer cache, the animated widget and offscreen pictures. Qt only; uses nothing else of ui/."""
