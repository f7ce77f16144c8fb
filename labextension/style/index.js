import './base.css';
import './diff.css';
