"""Long spoken questions for the benches of her brain (issue 53's prompt fills)."""

LONG_QUESTIONS = (
    "I've been thinking about taking up running this spring, but my knees sometimes hurt after "
    "long walks, so how should a complete beginner start without making that worse?",
    "My sister is visiting next weekend and she's vegetarian, while my partner only eats fish, so "
    "what could I cook on Saturday evening that would make both of them happy?",
    "What time is it in Tokyo right now, because I need to call a colleague there before the end "
    "of their working day, and I never remember the time difference?",
    "I keep forgetting to water the plants on my balcony, especially the tomatoes, which wilt "
    "quickly in the afternoon sun, so do you have a simple routine I could actually stick to?",
    "When I read in bed at night I often fall asleep after two pages, even with a book I really "
    "like, so would it be better to read earlier in the evening instead?",
    "Thanks for all of that, it was really helpful, and I think I'll try the running plan first, "
    "then the recipe on Saturday, so let's talk again tomorrow morning.",
)
"""25-34 words each (`--long`): the turns where the words themselves are most of what a turn
evaluates, and where words heard early can go ahead (brain/fill.py)."""
