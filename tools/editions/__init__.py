"""Both editions of the book: the site, the Chinese and Colab notebooks,
translations, glossary links, the live pages' exports, refresh, new
chapters."""
