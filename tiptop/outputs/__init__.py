"""What tiptop writes: batch text, csv and json (and the formats that join them)."""
