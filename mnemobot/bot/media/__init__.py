"""What people send besides text, made readable for a turn: speech to text, documents to text."""
