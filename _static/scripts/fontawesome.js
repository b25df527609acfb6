/* Replaces pydata-sphinx-theme's fontawesome.js (1.4 MB), which redraws the
   theme's icons as inline SVG. The theme's stylesheet already draws the same
   <i class="fa-..."> icons with the Font Awesome web fonts it bundles, so the
   site loads this empty file instead (html_static_path wins over the
   theme's own static files). */
